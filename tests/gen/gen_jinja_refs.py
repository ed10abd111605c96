#!/usr/bin/env python3
"""Jinja semantics references: small templates, each probing one construct of the interpreter's
subset (whitespace control, trim_blocks / lstrip_blocks, scoping, loop variables, filters, tests,
methods, operators, Python's str() of values, tojson, errors), rendered by transformers' own
Jinja environment (chat_template_utils._compile_jinja_template: ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks, loopcontrols, {% generation %}, its tojson, raise_exception,
strftime_now, dict, namespace) into tests/refs/chat/jinja-snippets.json.
tests/cli/check_chat_template.py renders each with `build/tok_driver jinja` and requires the
same text, or a failure where jinja2 raised (with the message, for raise_exception).

strftime_now sees a clock frozen at 2025-01-02 00:00:00 (the check runs with TZ=UTC).
Usage: .cache/venv-ref/bin/python tests/gen/gen_jinja_refs.py     (make chat-refs)
"""
import datetime
import json
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "tests", "refs", "chat", "jinja-snippets.json")

MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi é"},
        {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": " two\n lines "}]
VARS = {"messages": MSGS, "n": 3, "f": 1.5, "s": "Hello World", "e": "", "none_v": None, "t": True,
        "l": [3, 1, 2], "d": {"b": 2, "a": [1, 2, {"c": None}], "A": "x"}, "u": "ÉCOLE ß ǆ", "big": 12345678901234,
        "fl": [0.1, 1e16, 1e-5, 2.0, -0.0, 123456789.125, 1e300], "tools": None}

SNIPPETS = [
    # whitespace control, trim_blocks, lstrip_blocks, comments, raw, newlines
    "a\n  {% if t %}\n  b\n  {% endif %}\nc\n",
    "a  {%- if t -%}  b  {%- endif -%}  c",
    "  {{- s -}}  \n x",
    "x\n    {%+ if t %}y{% endif %}\n",
    "{% if t %}\n\nA{% endif +%}\nB",
    "  {# comment #}\nline\n  {#- c -#}   z",
    "{% raw %}{{ x }}{% endraw %}\n{%- raw -%}  {% if %}  {%- endraw %}",
    "line1\r\nline2\rline3\n\n",
    "\t{% for i in l %}\n\t{{ i }}\n\t{% endfor %}\n",
    "{{ s }}\n{{ n }}\n",
    # scoping
    "{% set x = 1 %}{% for i in l %}{% set x = x + i %}[{{ x }}]{% endfor %}{{ x }}",
    "{% for i in l %}{% if i == 1 %}{% set y = 5 %}{% endif %}[{{ y }}]{% endfor %}",
    "{% if t %}{% set z = 'in' %}{% endif %}{{ z }}",
    "{% set ns = namespace(k=0, found=false) %}{% for i in l %}{% set ns.k = ns.k + i %}{% endfor %}{{ ns.k }}{{ ns.found }}",
    "{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{{ n }}{% endmacro %}{{ m(1) }}|{{ m(1, 2) }}|{{ m(a=3, c=4) }}",
    "{% set q = 1 %}{% macro m() %}{{ q }}{% endmacro %}{% set q = 2 %}{{ m() }}",
    "{% macro outer() %}<{{ caller() }}>{% endmacro %}{% call outer() %}in {{ n }}{% endcall %}",
    "{% macro w(x) %}[{{ caller(x * 2) }}]{% endmacro %}{% call(v) w(3) %}v={{ v }}{% endcall %}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}",
    "{% set blk %}  body {{ n }}  {% endset %}[{{ blk }}]",
    "{% set blk | upper | trim %}  body  {% endset %}[{{ blk }}]",
    "{% filter upper %}up {{ s }}{% endfilter %}",
    "{% generation %}gen {{ n }}{% endgeneration %}",
    # loops
    "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
    "{% for m in messages if m.role == 'user' %}{{ loop.index }}/{{ loop.length }}:{{ m.content }};{% endfor %}",
    "{% for i in l %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% if i == 1 %}{% break %}{% endif %}{% endfor %}",
    "{% for i in [] %}x{% else %}empty{% endfor %}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
    "{% for k in d %}{{ k }}{% endfor %}",
    "{% for c in 'héllo' %}{{ c }}.{% endfor %}",
    "{% for i in l %}{{ loop.previtem }}-{{ loop.nextitem }}|{{ loop.cycle('a', 'b') }};{% endfor %}",
    "{% for i in range(3) %}{% for j in range(i) %}{{ i }}{{ j }} {% endfor %}{% endfor %}",
    "{% for x in none_v %}{% endfor %}",
    "{% for x in undefined_thing %}x{% else %}no{% endfor %}",
    # expressions
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 4 / 2 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}",
    "{{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }} {{ -n }} {{ +f }} {{ n * f }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }}",
    "{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ none == none }} {{ [1,2] == [1,2] }}",
    "{{ 'b' in 'abc' }} {{ 2 in l }} {{ 'a' in d }} {{ 'z' not in d }} {{ '' in 'x' }}",
    "{{ t and n }} {{ e or 'dflt' }} {{ not e }} {{ none_v or 0 }} {{ n and e }}",
    "{{ 'yes' if t else 'no' }} [{{ 'x' if e }}] {{ 1 if false else 2 if true else 3 }}",
    "{{ s ~ n ~ f ~ none_v ~ t }} {{ undefined_v ~ 'x' }}",
    "{{ s[0] }} {{ s[-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s[::2] }} {{ l[1:] }} {{ l[:-1] }} {{ l[10:] }} {{ u[1:4] }} {{ u[::-1] }}",
    "{{ d.b }} {{ d['b'] }} {{ d.a[2].c }} {{ d.missing }} [{{ l[10] }}] {{ messages[0].role }} {{ messages[-1]['content'] }}",
    "{{ {'x': 1, 'y': [1, 'a']} }} {{ [1, 'a', none, true, 1.5] }} {{ (1, 2) }} {{ (1,) }} {{ d }}",
    "{{ fl }} {{ 1e16 }} {{ 0.1 + 0.2 }} {{ 3.0 }} {{ 1 / 3 }} {{ big }} {{ -0.0 }}",
    "{{ 'it\\'s' }} {{ \"say \\\"hi\\\"\" }} {{ ['it\\'s', 'a\"b', 'a\\'b\"c', '\\n\\t\\\\'] }} {{ ['é', '\\u2028', '\\x00'] }}",
    "{{ 'a' 'b' \"c\" }} {{ '\\u00e9\\x41\\101\\N' }}",
    "{{ 'x' is string }}{{ 1 is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is boolean }}{{ t is true }}{{ e is false }}",
    "{{ d is mapping }}{{ l is iterable }}{{ s is iterable }}{{ n is iterable }}{{ l is sequence }}{{ d is sequence }}",
    "{{ none_v is none }}{{ x is defined }}{{ n is defined }}{{ x is undefined }}{{ n is divisibleby 3 }}{{ n is odd }}{{ n is even }}",
    "{{ n is eq 3 }}{{ n is equalto 3 }}{{ n is ne 3 }}{{ n is gt 2 }}{{ n is lt 2 }}{{ n is ge 3 }}{{ n is le 2 }}{{ 'a' is in 'abc' }}",
    "{{ s is lower }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ none_v is sameas none }}{{ messages is not string }}",
    "{{ namespace is callable }}{{ raise_exception is defined }}",
    # filters
    "{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ s | upper }}|{{ s | lower }}|{{ u | lower }}|{{ u | upper }}|{{ 'hello world' | title }}|{{ 'hELLO' | capitalize }}",
    "{{ l | length }} {{ s | length }} {{ u | length }} {{ d | length }} {{ undefined_v | length }} {{ l | count }}",
    "{{ l | join(', ') }} {{ l | join }} {{ messages | join('|', attribute='role') }} {{ undefined_v | join(',') }}",
    "{{ l | first }} {{ l | last }} {{ s | first }} {{ [] | first }} {{ l | list }} {{ s | list }} {{ d | list }}",
    "{{ undefined_v | default('dflt') }} {{ e | default('dflt') }} {{ e | default('dflt', true) }} {{ none_v | default('x') }} {{ undefined_v | d('d') }}",
    "{{ n | string }} {{ f | string }} {{ l | string }} {{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ f | int }} {{ '3.5' | float }} {{ n | float }} {{ 'q' | int(7) }}",
    "{{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(reverse=true) }} {{ {'b': 1, 'a': 2} | dictsort(by='value') }}",
    "{{ l | sort }} {{ l | sort(reverse=true) }} {{ ['b', 'A', 'a'] | sort }} {{ messages | sort(attribute='role') | map(attribute='content') | list }}",
    "{{ l | reverse | list }} {{ ['a', 'A', 'b', 'a'] | unique | list }} {{ -n | abs }} {{ f | round }} {{ 2.5 | round }}",
    "{{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('role', 'eq', 'user') | map(attribute='role') | join(',') }}",
    "{{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ [0, 1, '', 'a', none] | select | list }} {{ l | map('string') | join('-') }}",
    "{{ messages | map(attribute='missing', default='D') | list }} {{ ['a', 'b'] | map('upper') | list }}",
    "{{ 'a.b.c' | replace('.', '-') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ s | replace('', '_') }}",
    "{{ 'l1\\nl2\\n\\nl4' | indent }}|{{ 'l1\\nl2' | indent(2, true) }}|{{ 'l1\\n\\nl3' | indent(2, blank=true) }}|{{ 'x\\ny' | indent('>>') }}",
    "{{ 'a b  c' | wordcount }} {{ s | safe }}",
    # tojson as transformers defines it
    "{{ messages | tojson }}",
    "{{ d | tojson(indent=2) }}",
    "{{ d | tojson(sort_keys=true) }} {{ u | tojson }} {{ u | tojson(ensure_ascii=true) }} {{ 'a\"b\\\\c\\n\\u0001' | tojson }}",
    "{{ fl | tojson }} {{ [none, true, false, 1, 'x', {}] | tojson }} {{ [] | tojson(indent=4) }} {{ d | tojson(separators=(',', ':')) }}",
    "{{ {'emoji': '🌊'} | tojson(ensure_ascii=True) }}",
    # methods
    "{{ '  x  '.strip() }}|{{ 'xxyxx'.strip('x') }}|{{ '  x'.lstrip() }}|{{ 'x  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}",
    "{{ s.startswith('He') }} {{ s.endswith('ld') }} {{ s.startswith(('x', 'H')) }} {{ s.upper() }} {{ s.lower() }} {{ s.title() }} {{ 'aXb'.capitalize() }}",
    "{{ s.replace('l', 'L') }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('z') }} {{ s.count('l') }} {{ ', '.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }}",
    "{{ '{} and {}'.format(1, 'x') }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{name}!'.format(name='N') }} {{ '{{}}'.format() }}",
    "{{ '12'.isdigit() }} {{ ' '.isspace() }} {{ 'ab'.isalpha() }} {{ 'a1'.isalnum() }} {{ 'ab'.islower() }} {{ 'AB'.isupper() }}",
    "{{ d.get('b') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list | length }} {{ d.items() | list | first }}",
    "{{ l.index(1) }} {{ l.count(3) }}",
    # globals
    "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}",
    "{{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
    "{{ strftime_now('%d %b %Y') }} {{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%A %B %-d') }}",
    "{{ bos_token }}{{ eos_token }}{{ tools }}{{ tools is none }}{{ documents is defined }}",
    # errors: jinja2 raises, the interpreter must fail
    "{{ raise_exception('Custom message: ' ~ n) }}",
    "{{ undefined_v.attr }}",
    "{{ undefined_v + 1 }}",
    "{{ 1 / 0 }}",
    "{{ 'a' + 1 }}",
    "{{ l.append(4) }}",
    "{{ d.update({}) }}",
    "{% for x in n %}{% endfor %}",
    "{{ messages[0].content.nosuchmethod() }}",
    "{% if %}{% endif %}",
    "{% for x in l %}",
    "{{ 1 + }}",
    "{% endif %}",
    "{{ 'a' < 1 }}",
]


def main():
    import jinja2
    import transformers
    import transformers.utils.chat_template_utils as ctu

    fixed = datetime.datetime(2025, 1, 2, 0, 0, 0)

    class Frozen(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return fixed

    ctu.datetime = Frozen
    variables = dict(VARS, bos_token="<s>", eos_token="</s>", documents=None)
    out = {"generator": "tests/gen/gen_jinja_refs.py", "transformers_version": transformers.__version__,
           "jinja2_version": jinja2.__version__,
           "environment": "transformers.utils.chat_template_utils._compile_jinja_template(...).render(**vars)",
           "now": "2025-01-02 00:00:00", "vars": variables, "snippets": []}
    for t in SNIPPETS:
        try:
            r = {"template": t, "text": ctu._compile_jinja_template(t).render(**variables)}
        except Exception as e:
            r = {"template": t, "error": "%s: %s" % (type(e).__name__, e)}
        out["snippets"].append(r)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%d snippets, %d raise" % (len(SNIPPETS), sum("error" in s for s in out["snippets"])))


if __name__ == "__main__":
    main()
