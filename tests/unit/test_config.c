/* test_config.c - the architecture table (src/model/arch.c), config_from_json (src/model/config_json.c),
 * the layer rule and config_validate (src/model/config.c).
 *
 * The two JSON shapes are the ones transformers really writes: 5.x (5.23)
 * writes "rope_parameters": {"rope_theta", "rope_type", ...} and no top-level
 * rope_theta; 4.x wrote top-level "rope_theta" and "rope_scaling". Defaults are
 * LlamaConfig's. (config_from_gguf is tested in test_gguf.c, next to the GGUF
 * writer.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/config.h"
#include "base/util.h"

typedef struct {
    char dir[64];
    char path[128];
} cfgfile_t;

static const char *write_cfg(cfgfile_t *t, const char *json) {
    snprintf(t->dir, sizeof t->dir, "/tmp/llmgen-cfg-XXXXXX");
    cr_assert(mkdtemp(t->dir));
    snprintf(t->path, sizeof t->path, "%s/config.json", t->dir);
    FILE *f = fopen(t->path, "w");
    cr_assert(f);
    fputs(json, f);
    fclose(f);
    return t->path;
}

static void drop(cfgfile_t *t) {
    unlink(t->path);
    rmdir(t->dir);
}

/* Parse + validate; returns the result, message in err. */
static int parse(const char *json, model_config *c, char *err, cfgfile_t *t) {
    const char *p = write_cfg(t, json);
    err[0] = '\0';
    int rc = config_from_json(p, c, err);
    if (!rc) rc = config_validate(c, p, err);
    return rc;
}

static void expect_bad(const char *json, const char *want) {
    cfgfile_t t;
    model_config c;
    char err[ERR_LEN];
    int rc = parse(json, &c, err, &t);
    cr_expect_eq(rc, -1, "expected an error containing '%s' for %s", want, json);
    cr_expect(strstr(err, t.path) != NULL, "message does not name the file: %s", err);
    cr_expect(strstr(err, want) != NULL, "message lacks '%s': %s", want, err);
    cr_expect(strchr(err, '\n') == NULL, "message is not one line: %s", err);
    drop(&t);
}

/* The keys every test config shares; tests append to it. */
#define BASE                                                                             \
    "\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "        \
    "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100"

/* What transformers 5.23 writes for LlamaConfig(hidden_size=64, intermediate_size=128,
 * num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=100,
 * rope_parameters={llama3...}, tie_word_embeddings=True, eos_token_id=[1,2,3]). */
static const char *HF5_LLAMA3 =
    "{\"attention_bias\": false, \"attention_dropout\": 0.0, \"bos_token_id\": 1,\n"
    " \"eos_token_id\": [1, 2, 3], \"head_dim\": 16, \"hidden_act\": \"silu\",\n"
    " \"hidden_size\": 64, \"initializer_range\": 0.02, \"intermediate_size\": 128,\n"
    " \"max_position_embeddings\": 2048, \"mlp_bias\": false, \"model_type\": \"llama\",\n"
    " \"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"num_key_value_heads\": 2,\n"
    " \"pad_token_id\": null, \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-06,\n"
    " \"rope_parameters\": {\"factor\": 32.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0,\n"
    "   \"original_max_position_embeddings\": 8192, \"rope_theta\": 500000.0, \"rope_type\": \"llama3\"},\n"
    " \"tie_word_embeddings\": true, \"transformers_version\": \"5.23.0\", \"use_cache\": true,\n"
    " \"vocab_size\": 100}\n";

static void expect_llama3(const model_config *c, float theta, float factor, int orig) {
    cr_expect_eq(c->rope_scaling, ROPE_SCALING_LLAMA3);
    cr_expect_eq(c->rope_theta, theta);
    cr_expect_eq(c->rope_factor, factor);
    cr_expect_eq(c->rope_low_freq_factor, 1.0f);
    cr_expect_eq(c->rope_high_freq_factor, 4.0f);
    cr_expect_eq(c->rope_orig_max_pos, orig);
}

Test(config_json, transformers5_llama3) {
    cfgfile_t t;
    model_config c;
    char err[ERR_LEN];
    cr_assert_eq(parse(HF5_LLAMA3, &c, err, &t), 0, "%s", err);
    cr_expect_str_eq(c.arch, "llama");
    cr_expect_eq(c.dim, 64);
    cr_expect_eq(c.n_layers, 2);
    cr_expect_eq(c.n_heads, 4);
    cr_expect_eq(c.n_kv_heads, 2);
    cr_expect_eq(c.head_dim, 16);
    cr_expect_eq(c.hidden_dim, 128);
    cr_expect_eq(c.vocab_size, 100);
    cr_expect_eq(c.max_pos, 2048);
    cr_expect_float_eq(c.rms_eps, 1e-6f, 1e-13);
    expect_llama3(&c, 500000.0f, 32.0f, 8192);
    cr_expect_eq(c.tied_embeddings, 1);
    cr_expect_eq(c.rope_interleaved, 0);
    cr_expect_eq(c.bos_id, 1);
    cr_expect_eq(c.n_eos, 3);
    cr_expect_eq(c.eos_ids[0], 1);
    cr_expect_eq(c.eos_ids[2], 3);
    drop(&t);
}

Test(config_json, transformers4_llama3) {
    cfgfile_t t;
    model_config c;
    char err[ERR_LEN];
    /* Llama-3.2-1B's config.json as transformers 4.45 wrote it (sizes shrunk). */
    cr_assert_eq(parse("{" BASE ", \"num_key_value_heads\": 2, \"rope_theta\": 500000.0,"
                       " \"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0,"
                       " \"low_freq_factor\": 1.0, \"original_max_position_embeddings\": 8192,"
                       " \"rope_type\": \"llama3\"}, \"max_position_embeddings\": 131072,"
                       " \"tie_word_embeddings\": true, \"bos_token_id\": 0,"
                       " \"eos_token_id\": [1, 2, 3], \"rms_norm_eps\": 1e-05}",
                       &c, err, &t), 0, "%s", err);
    expect_llama3(&c, 500000.0f, 32.0f, 8192);
    cr_expect_eq(c.max_pos, 131072);
    cr_expect_eq(c.bos_id, 0);
    cr_expect_eq(c.n_eos, 3);
    cr_expect_float_eq(c.rms_eps, 1e-5f, 1e-12);
    drop(&t);
    /* the older "type" spelling, and rope_scaling winning over rope_parameters */
    cr_assert_eq(parse("{" BASE ", \"rope_theta\": 1000.0, \"rope_parameters\": {\"rope_type\":"
                       " \"default\", \"rope_theta\": 7.0}, \"rope_scaling\": {\"type\": \"llama3\","
                       " \"factor\": 8, \"low_freq_factor\": 1, \"high_freq_factor\": 4}}",
                       &c, err, &t), 0, "%s", err);
    expect_llama3(&c, 1000.0f, 8.0f, 2048); /* original: max_position_embeddings */
    drop(&t);
    /* a top-level original_max_position_embeddings wins over the dict's */
    cr_assert_eq(parse("{" BASE ", \"original_max_position_embeddings\": 64, \"rope_scaling\":"
                       " {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1,"
                       " \"high_freq_factor\": 4, \"original_max_position_embeddings\": 128}}",
                       &c, err, &t), 0, "%s", err);
    expect_llama3(&c, 10000.0f, 8.0f, 64);
    drop(&t);
}

Test(config_json, defaults_are_llamaconfigs) {
    cfgfile_t t;
    model_config c;
    char err[ERR_LEN];
    cr_assert_eq(parse("{" BASE "}", &c, err, &t), 0, "%s", err);
    cr_expect_eq(c.n_kv_heads, 4);   /* = num_attention_heads */
    cr_expect_eq(c.head_dim, 16);    /* = hidden / heads */
    cr_expect_eq(c.max_pos, 2048);
    cr_expect_float_eq(c.rms_eps, 1e-6f, 1e-13);
    cr_expect_eq(c.rope_theta, 10000.0f);
    cr_expect_eq(c.rope_scaling, ROPE_SCALING_NONE);
    cr_expect_eq(c.tied_embeddings, 0);
    cr_expect_eq(c.bos_id, 1);
    cr_expect_eq(c.n_eos, 1);
    cr_expect_eq(c.eos_ids[0], 2);
    drop(&t);
    /* explicit nulls: no bos, no eos; null head_dim / kv heads take the defaults */
    cr_assert_eq(parse("{" BASE ", \"bos_token_id\": null, \"eos_token_id\": null,"
                       " \"head_dim\": null, \"num_key_value_heads\": null,"
                       " \"rope_scaling\": null, \"rope_parameters\": {\"rope_type\": \"default\","
                       " \"rope_theta\": 100000.0}}", &c, err, &t), 0, "%s", err);
    cr_expect_eq(c.bos_id, -1);
    cr_expect_eq(c.n_eos, 0);
    cr_expect_eq(c.head_dim, 16);
    cr_expect_eq(c.n_kv_heads, 4);
    cr_expect_eq(c.rope_theta, 100000.0f);
    drop(&t);
    /* eos as a single integer; architectures instead of model_type; head_dim != hidden/heads */
    cr_assert_eq(parse("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 96,"
                       " \"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"head_dim\": 32,"
                       " \"intermediate_size\": 10, \"vocab_size\": 50, \"eos_token_id\": 49}",
                       &c, err, &t), 0, "%s", err);
    cr_expect_eq(c.head_dim, 32);
    cr_expect_eq(c.n_eos, 1);
    cr_expect_eq(c.eos_ids[0], 49);
    drop(&t);
}

Test(config_json, the_stored_fixtures_parse) {
    /* every fixture directory's config.json (written by transformers) is accepted */
    const char *dirs[] = {"tiny-gqa-llama3-bf16", "tiny-gqa-llama3-tied-f32", "tiny-legacy-keys-f32",
                          "tiny-mha-f32", "tiny-mqa-odd-tied-f32"};
    int seen = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char p[256];
        snprintf(p, sizeof p, "tests/fixtures/%s/config.json", dirs[i]);
        if (access(p, R_OK)) continue;
        seen++;
        model_config c;
        char err[ERR_LEN];
        cr_expect_eq(config_from_json(p, &c, err), 0, "%s", err);
        cr_expect_eq(config_validate(&c, p, err), 0, "%s", err);
    }
    if (!seen) cr_skip_test("no tests/fixtures/*/config.json (run from the repository root)");
}

Test(config_json, missing_required_keys) {
    const char *keys[] = {"hidden_size", "num_hidden_layers", "num_attention_heads",
                          "intermediate_size", "vocab_size"};
    for (int i = 0; i < 5; i++) {
        /* BASE with key i renamed */
        char json[512] = "{" BASE "}";
        char *at = strstr(json, keys[i]);
        cr_assert(at);
        at[0] = 'X';
        char want[64];
        snprintf(want, sizeof want, "missing required key '%s'", keys[i]);
        expect_bad(json, want);
    }
}

Test(config_json, unsupported_architectures_and_features) {
    expect_bad("{\"model_type\": \"gpt2\", \"hidden_size\": 64}", "unsupported architecture 'gpt2'");
    expect_bad("{\"architectures\": [\"GPT2LMHeadModel\"]}", "unsupported architecture 'GPT2LMHeadModel'");
    expect_bad("{\"hidden_size\": 64}", "missing required key 'model_type'");
    expect_bad("{" BASE ", \"hidden_act\": \"gelu\"}", "unsupported hidden_act 'gelu'");
    expect_bad("{" BASE ", \"attention_bias\": true}", "attention_bias");
    expect_bad("{" BASE ", \"mlp_bias\": true}", "mlp_bias");
    expect_bad("{" BASE ", \"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 4}}",
               "unsupported rope_scaling.rope_type 'dynamic'");
    expect_bad("{" BASE ", \"rope_parameters\": {\"rope_type\": \"dynamic\", \"factor\": 4}}",
               "unsupported rope_parameters.rope_type 'dynamic'");
    expect_bad("{" BASE ", \"partial_rotary_factor\": 0.5}", "partial_rotary_factor");
    expect_bad("{" BASE ", \"rope_parameters\": {\"rope_type\": \"llama3\", \"factor\": 8,"
               " \"low_freq_factor\": 1}}", "missing required key 'rope_parameters.high_freq_factor'");
}

Test(config_json, bad_values) {
    expect_bad("{" BASE ", \"num_key_value_heads\": 3}", "not a multiple of 3 kv heads");
    expect_bad("{" BASE ", \"head_dim\": 15}", "head_dim 15 must be even");
    expect_bad("{" BASE ", \"rms_norm_eps\": 0}", "rms_norm_eps");
    expect_bad("{" BASE ", \"rope_theta\": -1}", "rope_theta");
    expect_bad("{" BASE ", \"rope_theta\": \"big\"}", "key 'rope_theta' must be a number");
    expect_bad("{" BASE ", \"eos_token_id\": [1, \"x\"]}", "eos_token_id");
    expect_bad("{" BASE ", \"eos_token_id\": [1,2,3,4,5,6,7,8,9]}", "at most 8");
    expect_bad("{" BASE ", \"eos_token_id\": 100}", "eos token id 100 outside the vocabulary");
    expect_bad("{" BASE ", \"bos_token_id\": -1}", "bos_token_id");
    expect_bad("{" BASE ", \"tie_word_embeddings\": 1}", "tie_word_embeddings");
    expect_bad("{\"model_type\": \"llama\", \"hidden_size\": 64.5}", "hidden_size");
    expect_bad("{\"model_type\": \"llama\", \"hidden_size\": 0}", "hidden_size");
    expect_bad("{\"model_type\": \"llama\", \"hidden_size\": 99999999999}", "hidden_size");
    expect_bad("{\"model_type\": \"llama\", \"hidden_size\": 1048576, \"num_hidden_layers\": 2,"
               " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100}",
               "hidden size 1048576 out of range");
    expect_bad("{" BASE ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8,"
               " \"low_freq_factor\": 4, \"high_freq_factor\": 4}}", "llama3 rope scaling");
}

Test(config_json, bad_json) {
    expect_bad("{\"model_type\": \"llama\",\n  \"hidden_size\": 64,,}", "line 2, column");
    expect_bad("[1, 2]", "expected a JSON object");
    expect_bad("", "not valid JSON");
    expect_bad("{\"model_type\": \"llama\", \"model_type\": \"llama\"}", "duplicate");
    model_config c;
    char err[ERR_LEN];
    cr_expect_eq(config_from_json("/nonexistent/config.json", &c, err), -1);
    cr_expect(strstr(err, "/nonexistent/config.json"), "%s", err);
}

Test(config_validate, bounds) {
    cfgfile_t t;
    model_config c, good;
    char err[ERR_LEN];
    cr_assert_eq(parse("{" BASE "}", &good, err, &t), 0, "%s", err);
    drop(&t);
    c = good, c.n_layers = 0;
    cr_expect_eq(config_validate(&c, "SRC", err), -1);
    cr_expect(strstr(err, "SRC: layer count 0"), "%s", err);
    c = good, c.vocab_size = -5;
    cr_expect_eq(config_validate(&c, "SRC", err), -1);
    c = good, c.n_kv_heads = 8; /* more kv heads than heads */
    cr_expect_eq(config_validate(&c, "SRC", err), -1);
    c = good, c.rms_eps = 0.0f / 0.0f; /* NaN */
    cr_expect_eq(config_validate(&c, "SRC", err), -1);
    c = good, c.rope_theta = 1.0f / 0.0f;
    cr_expect_eq(config_validate(&c, "SRC", err), -1);
    c = good, c.bos_id = 100;
    cr_expect_eq(config_validate(&c, "SRC", err), -1);
    c = good, c.n_eos = CONFIG_MAX_EOS + 1;
    cr_expect_eq(config_validate(&c, "SRC", err), -1);
    c = good;
    cr_expect_eq(config_validate(&c, "SRC", err), 0, "%s", err);
}

/* The families of the architecture table: the keys that change a result, in the
 * shapes transformers 5.23 writes them (and the older ones). */
#define SIZES "\"hidden_size\": 64, \"num_hidden_layers\": 6, \"num_attention_heads\": 4, " \
              "\"intermediate_size\": 128, \"vocab_size\": 100"

Test(config_json, families) {
    cfgfile_t t;
    model_config c;
    char err[ERR_LEN];
    /* Gemma 3: nested rope parameters, layer types, query_pre_attn_scalar, tied by default */
    cr_assert_eq(parse("{\"model_type\": \"gemma3_text\", " SIZES ", \"head_dim\": 16, \"sliding_window\": 5, "
                       "\"query_pre_attn_scalar\": 64, \"rope_parameters\": {\"full_attention\": {\"rope_type\": "
                       "\"default\", \"rope_theta\": 1000000.0}, \"sliding_attention\": {\"rope_type\": \"default\", "
                       "\"rope_theta\": 10000.0}}}", &c, err, &t), 0, "%s", err);
    cr_expect_str_eq(c.arch, "gemma3");
    cr_expect(c.flags & ARCH_POST_NORMS && c.act == ACT_GELU_TANH && c.tied_embeddings);
    cr_expect_eq(c.rope_theta, 1e6f);
    cr_expect_eq(c.rope_theta_swa, 1e4f);
    cr_expect_eq(c.attn_scale, 0.125f);
    cr_expect_eq(c.sliding_window, 5);
    for (int l = 0; l < 6; l++) cr_expect_eq(c.layer_flags[l], l == 5 ? 0 : LAYER_SLIDING, "layer %d", l);
    drop(&t);
    /* Qwen2: the window only with use_sliding_window, from max_window_layers on */
    cr_assert_eq(parse("{\"model_type\": \"qwen2\", " SIZES ", \"sliding_window\": 8, \"use_sliding_window\": true, "
                       "\"max_window_layers\": 4}", &c, err, &t), 0, "%s", err);
    for (int l = 0; l < 6; l++) cr_expect_eq(c.layer_flags[l], l >= 4 ? LAYER_SLIDING : 0, "layer %d", l);
    drop(&t);
    cr_assert_eq(parse("{\"model_type\": \"qwen2\", " SIZES ", \"sliding_window\": 8}", &c, err, &t), 0, "%s", err);
    cr_expect_eq(c.sliding_window, 0);
    drop(&t);
    /* SmolLM3: no_rope_layers, 1 = RoPE */
    cr_assert_eq(parse("{\"model_type\": \"smollm3\", " SIZES ", \"bos_token_id\": 1, \"eos_token_id\": 2, \"no_rope_layers\": [1, 0, 1, 1, 0, 1]}", &c, err, &t), 0,
                 "%s", err);
    for (int l = 0; l < 6; l++) cr_expect_eq(c.layer_flags[l], l == 1 || l == 4 ? LAYER_NO_ROPE : 0, "layer %d", l);
    drop(&t);
    /* Phi-3: partial rotary, LongRoPE with the default attention factor */
    cr_assert_eq(parse("{\"model_type\": \"phi3\", " SIZES ", \"eos_token_id\": 2, \"max_position_embeddings\": 64, "
                       "\"original_max_position_embeddings\": 16, \"rope_parameters\": {\"rope_type\": \"longrope\", "
                       "\"rope_theta\": 10000.0, \"partial_rotary_factor\": 0.5, \"short_factor\": [1, 1, 1, 1], "
                       "\"long_factor\": [2, 3, 4, 5]}}", &c, err, &t), 0, "%s", err);
    cr_expect_eq(c.rot_dim, 8);
    cr_expect_eq(c.rope_scaling, ROPE_SCALING_LONGROPE);
    cr_expect_eq(c.rope_orig_max_pos, 16);
    cr_expect_eq(c.rope_attn_factor, (float)sqrt(1.0 + log(4.0) / log(16.0)));
    cr_expect_eq(c.rope_long[3], 5.0f);
    drop(&t);
    expect_bad("{\"model_type\": \"phi3\", " SIZES ", \"eos_token_id\": 2, \"original_max_position_embeddings\": 16, \"rope_parameters\": "
               "{\"rope_type\": \"longrope\", \"short_factor\": [1], \"long_factor\": [2]}}",
               "must be a list of 8 numbers");
    expect_bad("{\"model_type\": \"gemma3_text\", " SIZES ", \"layer_types\": [\"full_attention\"]}",
               "'layer_types' must list 6");
    expect_bad("{\"model_type\": \"gemma3_text\", " SIZES ", \"hidden_activation\": \"silu\"}",
               "unsupported hidden_activation 'silu'");
    expect_bad("{\"model_type\": \"gemma3_text\", " SIZES ", \"attn_logit_softcapping\": 50.0}", "attn_logit_softcapping");
}

/* Qwen3.5: Gated DeltaNet layers by full_attention_interval (default 4) or layer_types; the
 * class defaults of the linear sizes and of partial_rotary_factor (0.25). */
Test(config_json, qwen35_hybrid) {
    cfgfile_t t;
    model_config c;
    char err[ERR_LEN];
    cr_assert_eq(parse("{\"model_type\": \"qwen3_5_text\", " SIZES ", \"head_dim\": 32}", &c, err, &t), 0, "%s", err);
    cr_expect_str_eq(c.arch, "qwen35");
    cr_expect(c.flags & ARCH_GATED_DELTANET && c.flags & ARCH_ATTN_GATE && c.flags & ARCH_NORM_PLUS_ONE);
    for (int l = 0; l < 6; l++) cr_expect_eq(c.layer_flags[l], l == 3 ? 0 : LAYER_LINEAR, "layer %d", l);
    cr_expect_eq(c.n_linear, 5);
    cr_expect_eq(c.rot_dim, 8);
    cr_expect(c.lin_conv == 4 && c.lin_dk == 128 && c.lin_dv == 128 && c.lin_hk == 16 && c.lin_hv == 32);
    drop(&t);
    cr_assert_eq(parse("{\"model_type\": \"qwen3_5_text\", " SIZES ", \"full_attention_interval\": 2, "
                       "\"linear_num_key_heads\": 2, \"linear_num_value_heads\": 6, \"linear_conv_kernel_dim\": 3, "
                       "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1e7, "
                       "\"partial_rotary_factor\": 0.5}}", &c, err, &t), 0, "%s", err);
    for (int l = 0; l < 6; l++) cr_expect_eq(c.layer_flags[l], l % 2 ? 0 : LAYER_LINEAR, "layer %d", l);
    cr_expect(c.lin_hk == 2 && c.lin_hv == 6 && c.lin_conv == 3 && c.rot_dim == 128 && c.rope_theta == 1e7f);
    drop(&t);
    cr_assert_eq(parse("{\"model_type\": \"qwen3_5_text\", " SIZES ", \"layer_types\": [\"full_attention\", "
                       "\"linear_attention\", \"full_attention\", \"full_attention\", \"linear_attention\", "
                       "\"full_attention\"]}", &c, err, &t), 0, "%s", err);
    for (int l = 0; l < 6; l++) cr_expect_eq(c.layer_flags[l], l == 1 || l == 4 ? LAYER_LINEAR : 0, "layer %d", l);
    drop(&t);
    /* the multimodal wrapper: the text model from text_config, the wrapper's tie_word_embeddings */
    cr_assert_eq(parse("{\"model_type\": \"qwen3_5\", \"tie_word_embeddings\": true, \"vision_config\": {}, "
                       "\"text_config\": {\"model_type\": \"qwen3_5_text\", " SIZES ", \"tie_word_embeddings\": false}}",
                       &c, err, &t), 0, "%s", err);
    cr_expect_str_eq(c.arch, "qwen35");
    cr_expect(c.tied_embeddings && c.n_linear == 5 && c.dim == 64);
    drop(&t);
    expect_bad("{\"model_type\": \"qwen3_5\", \"text_config\": {\"model_type\": \"gpt2\"}}", "unsupported architecture 'qwen3_5'");
    expect_bad("{\"model_type\": \"qwen3_5_text\", " SIZES ", \"linear_num_key_heads\": 4, "
               "\"linear_num_value_heads\": 6}", "6 linear value heads are not a multiple of 4 linear key heads");
    expect_bad("{\"model_type\": \"qwen3_5_text\", " SIZES ", \"linear_conv_kernel_dim\": 0}",
               "'linear_conv_kernel_dim' must be an integer >= 1");
    expect_bad("{\"model_type\": \"qwen3_5_text\", " SIZES ", \"layer_types\": [\"sliding_attention\", "
               "\"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\", "
               "\"full_attention\"]}", "must be full_attention or linear_attention");
}

/* LFM2: conv layers from layer_types or full_attn_idxs (neither: all attention), the MLP width
 * adjusted as Lfm2MLP does (int(2 I / 3), times the multiplier, up to a multiple), block_ff_dim and
 * tie_embedding as aliases that win, norm_eps, conv_L_cache. */
Test(config_json, lfm2_short_conv) {
    cfgfile_t t;
    model_config c;
    char err[ERR_LEN];
    cr_assert_eq(parse("{\"model_type\": \"lfm2\", " SIZES ", \"layer_types\": [\"conv\", \"full_attention\", "
                       "\"conv\", \"conv\", \"full_attention\", \"conv\"], \"norm_eps\": 1e-4, \"conv_L_cache\": 4, "
                       "\"block_multiple_of\": 32}", &c, err, &t), 0, "%s", err);
    cr_expect_str_eq(c.arch, "lfm2");
    cr_expect(c.n_linear == 4 && (c.layer_flags[0] & LAYER_LINEAR) && !(c.layer_flags[1] & LAYER_LINEAR));
    cr_expect_eq(c.hidden_dim, 96); /* int(2 * 128 / 3) = 85, up to 96 */
    cr_expect(c.lin_conv == 4 && c.rms_eps == 1e-4f && c.tied_embeddings && c.rope_theta == 1e6f);
    drop(&t);
    cr_assert_eq(parse("{\"model_type\": \"lfm2\", " SIZES ", \"full_attn_idxs\": [2, 5], \"block_ff_dim\": 12288, "
                       "\"tie_embedding\": false, \"tie_word_embeddings\": true}", &c, err, &t), 0, "%s", err);
    cr_expect(c.n_linear == 4 && !(c.layer_flags[2] & LAYER_LINEAR) && (c.layer_flags[3] & LAYER_LINEAR));
    cr_expect_eq(c.hidden_dim, 8192); /* LFM2-2.6B's */
    cr_expect(!c.tied_embeddings && c.lin_conv == 3);
    drop(&t);
    cr_assert_eq(parse("{\"model_type\": \"lfm2\", " SIZES ", \"block_ffn_dim_multiplier\": null}", &c, err, &t), 0,
                 "%s", err);
    cr_expect(c.n_linear == 0 && c.hidden_dim == 85); /* no multiplier: no rounding (transformers) */
    drop(&t);
    expect_bad("{\"model_type\": \"lfm2\", " SIZES ", \"conv_bias\": true}", "unsupported 'conv_bias'");
    expect_bad("{\"model_type\": \"lfm2\", " SIZES ", \"layer_types\": [\"linear_attention\", \"conv\", \"conv\", "
               "\"conv\", \"conv\", \"conv\"]}", "must be full_attention or conv");
    expect_bad("{\"model_type\": \"lfm2\", " SIZES ", \"full_attn_idxs\": [6]}", "'full_attn_idxs' entry 0");
    /* LFM2-MoE: the MLP width as given, experts after the first num_dense_layers, the routing's scale */
    cr_assert_eq(parse("{\"model_type\": \"lfm2_moe\", " SIZES ", \"layer_types\": [\"conv\", \"full_attention\", "
                       "\"conv\", \"conv\", \"full_attention\", \"conv\"], \"num_experts\": 8, \"num_dense_layers\": 3, "
                       "\"routed_scaling_factor\": 2.5}", &c, err, &t), 0, "%s", err);
    cr_expect_str_eq(c.arch, "lfm2moe");
    cr_expect(c.hidden_dim == 128 && c.expert_dim == 1792 && c.n_experts_used == 4 && c.moe_renorm && c.moe_bias);
    cr_expect(!(c.layer_flags[2] & LAYER_MOE) && (c.layer_flags[3] & LAYER_MOE) && c.moe_scale == 2.5f);
    drop(&t);
}

/* Gemma 4: per_layer_config or global_head_dim (512 by default) on the full layers, the last layer full, the
 * kv-shared layers' producers the last earlier layer of their type (not llama.cpp's fixed rule),
 * attention_k_eq_v with num_global_key_value_heads, double-wide MLPs on the shared layers, proportional RoPE. */
Test(config_json, gemma4_per_layer) {
    cfgfile_t t;
    model_config c;
    char err[ERR_LEN];
#define G4 "\"model_type\": \"gemma4_text\", " SIZES ", \"head_dim\": 16, \"num_key_value_heads\": 2, "
#define G4_TYPES "\"layer_types\": [\"sliding_attention\", \"sliding_attention\", \"full_attention\", " \
                 "\"sliding_attention\", \"sliding_attention\", \"sliding_attention\"]"
    cr_assert_eq(parse("{" G4 G4_TYPES ", \"num_kv_shared_layers\": 2, \"per_layer_config\": {\"2\": "
                       "{\"head_dim\": 32}, \"5\": {\"head_dim\": 32}}, \"hidden_size_per_layer_input\": 8}",
                       &c, err, &t), 0, "%s", err);
    cr_expect_str_eq(c.arch, "gemma4");
    cr_expect(c.per_layer && c.head_dim == 32 && c.head_dim_swa == 16 && c.rot_dim == 32, "%d %d", c.head_dim,
              c.head_dim_swa);
    cr_expect_eq(c.rope_pairs, 4); /* int(0.25 * 32 // 2) */
    cr_expect_eq(c.attn_scale, 1.0f);
    cr_expect(c.flags & ARCH_PER_LAYER_INPUT && c.ple_dim == 8 && c.ple_vocab == 262144);
    cr_expect_eq(c.layer_flags[5] & LAYER_SLIDING, 0); /* the last layer is full */
    cr_expect(c.layer_flags[4] & LAYER_KV_SHARED && c.layer_flags[5] & LAYER_KV_SHARED &&
              !(c.layer_flags[3] & LAYER_KV_SHARED));
    cr_expect(c.kv_source[4] == 3 && c.kv_source[5] == 2 && c.kv_source[3] == 3, "%d %d", c.kv_source[4], c.kv_source[5]);
    cr_expect(c.layer_head_dim[5] == 32 && c.layer_head_dim[4] == 16);
    drop(&t);
    cr_assert_eq(parse("{" G4 G4_TYPES ", \"attention_k_eq_v\": true, \"num_global_key_value_heads\": 1, "
                       "\"global_head_dim\": 64, \"use_double_wide_mlp\": true, \"num_kv_shared_layers\": 1, "
                       "\"hidden_size_per_layer_input\": null}", &c, err, &t), 0, "%s", err);
    cr_expect(c.layer_kv_heads[2] == 1 && c.layer_kv_heads[0] == 2 && c.layer_head_dim[2] == 64);
    cr_expect(c.layer_flags[2] & LAYER_K_EQ_V && !(c.layer_flags[0] & LAYER_K_EQ_V));
    cr_expect(!(c.layer_flags[5] & LAYER_K_EQ_V) && c.kv_source[5] == 2); /* shared: no projections at all */
    cr_expect(c.layer_hidden[5] == 256 && c.layer_hidden[4] == 128 && c.hidden_dim == 256);
    cr_expect(!(c.flags & ARCH_PER_LAYER_INPUT) && c.ple_dim == 0);
    drop(&t);
    expect_bad("{" G4 "\"layer_types\": [\"full_attention\", \"full_attention\", \"full_attention\", "
               "\"sliding_attention\", \"sliding_attention\", \"full_attention\"], \"num_kv_shared_layers\": 3}",
               "has no earlier sliding layer");
    expect_bad("{" G4 G4_TYPES ", \"per_layer_config\": {\"9\": {\"head_dim\": 32}}}", "per_layer_config.9");
    expect_bad("{" G4 G4_TYPES ", \"per_layer_config\": {\"2\": {\"sliding_window\": 32}}}",
               "unsupported per_layer_config.2.sliding_window");
    expect_bad("{" G4 G4_TYPES ", \"enable_moe_block\": true}", "enable_moe_block");
#undef G4
#undef G4_TYPES
}

/* Every row of the architecture table carries every fact: names, a valid activation and
 * slide rule, config class defaults in range, and names no other row has. A row that
 * leaves a field out does not compile; this catches one whose values are wrong. */
Test(arch_table, every_row_is_complete) {
    cr_assert_gt(arch_count(), 0);
    for (int i = 0; i < arch_count(); i++) {
        const arch_info *a = arch_at(i);
        cr_assert(a && a->name && a->hf_model_type && a->hf_class, "row %d lacks a name", i);
        const char *n = a->name;
        cr_expect(*a->name && *a->hf_model_type && *a->hf_class, "%s: empty name", n);
        cr_expect(strlen(a->name) < sizeof ((model_config *)0)->arch, "%s: name too long", n);
        cr_expect(a->act == ACT_SILU || a->act == ACT_GELU_TANH || a->act == ACT_SWIGLU_CLAMP, "%s: activation", n);
        cr_expect(a->tied == 0 || a->tied == 1, "%s: tied", n);
        cr_expect(a->max_pos > 0, "%s: max_pos", n);
        cr_expect(a->bos >= -1 && a->eos >= -1, "%s: bos / eos", n);
        cr_expect(a->head_dim >= 0 && a->head_dim % 2 == 0, "%s: head_dim", n);
        cr_expect(a->theta > 0, "%s: rope theta", n);
        cr_expect(a->eps > 0 && a->eps < 1, "%s: rms eps", n);
        cr_expect(a->longrope_orig >= 0, "%s: longrope original context", n);
        cr_expect(a->slide >= SLIDE_NONE && a->slide <= SLIDE_EVEN, "%s: slide rule", n);
        cr_expect(a->sw_default >= 0, "%s: default window", n);
        cr_expect(a->slide != SLIDE_NO_ROPE || (a->keys & KEY_NO_ROPE), "%s: slides by no-RoPE without it", n);
        cr_expect(a->slide != SLIDE_NONE || a->sw_default == 0, "%s: a default window that never applies", n);
        cr_expect(!(a->keys & ~(((KEY_PER_LAYER << 1) - 1) | KEY_YARN_DEFAULT | KEY_SHORT_CONV | KEY_FF_ADJUST)),
                  "%s: unknown key flags", n);
        cr_expect(!(a->flags & ARCH_PER_LAYER_INPUT), "%s: a flag only the readers set", n);
        cr_expect_eq(arch_by_gguf(a->name, strlen(a->name)), a, "%s: GGUF name not unique", n);
        cr_expect_eq(arch_by_model_type(a->hf_model_type), a, "%s: model_type not unique", n);
        cr_expect_eq(arch_by_class(a->hf_class), a, "%s: class not unique", n);
    }
    cr_expect_null(arch_at(arch_count()));
}

/* Each family's config.json with only the required sizes: every default comes from the
 * family's own row (no fallback to another family's). */
Test(arch_table, defaults_come_from_the_row) {
    for (int i = 0; i < arch_count(); i++) {
        const arch_info *a = arch_at(i);
        char json[512];
        snprintf(json, sizeof json, "{\"model_type\": \"%s\", \"hidden_size\": 64, \"num_hidden_layers\": 6, "
                 "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 200000}", a->hf_model_type);
        cfgfile_t t;
        model_config c;
        char err[ERR_LEN];
        cr_assert_eq(parse(json, &c, err, &t), 0, "%s: %s", a->name, err);
        cr_expect_str_eq(c.arch, a->name);
        cr_expect_eq(c.family, a);
        cr_expect_eq(c.flags & ~ARCH_PER_LAYER_INPUT, a->flags, "%s", a->name);
        cr_expect_eq(c.max_pos, a->max_pos, "%s", a->name);
        cr_expect_eq(c.rms_eps, (float)a->eps, "%s", a->name);
        cr_expect_eq(c.rope_theta, (float)a->theta, "%s", a->name);
        /* per-layer shapes: the sliding layers' head_dim is the row's (c.head_dim the full layers') */
        cr_expect_eq(c.per_layer ? c.head_dim_swa : c.head_dim, a->head_dim ? a->head_dim : 16, "%s", a->name);
        cr_expect_eq(c.tied_embeddings, a->tied, "%s", a->name);
        cr_expect_eq(c.bos_id, a->bos, "%s", a->name);
        cr_expect_eq(c.n_eos ? c.eos_ids[0] : -1, a->eos, "%s", a->name);
        drop(&t);
    }
}

static const arch_info *family(const char *name) { return arch_by_gguf(name, strlen(name)); }

/* config_set_layers, the one rule both readers apply: each slide rule, the file's own
 * lists winning over it, and a window only where the family's layers slide. */
Test(config_layers, the_one_rule) {
    model_config c;
    config_defaults(&c);
    c.n_layers = 8;
    config_layer_spec ls = {.max_window_layers = 5, .pattern = 3, .no_rope_interval = 4};
    config_set_family(&c, family("gemma3"));
    c.sliding_window = 16;
    config_set_layers(&c, &ls);
    for (int l = 0; l < 8; l++) cr_expect_eq(c.layer_flags[l], l % 3 == 2 ? 0 : LAYER_SLIDING, "gemma3 layer %d", l);
    const uint8_t slides[8] = {1, 0, 0, 1, 0, 0, 0, 1};
    ls.slides = slides;
    config_set_layers(&c, &ls);
    for (int l = 0; l < 8; l++) cr_expect_eq(c.layer_flags[l], slides[l] ? LAYER_SLIDING : 0, "list, layer %d", l);
    ls.slides = NULL;
    config_set_family(&c, family("qwen2"));
    config_set_layers(&c, &ls);
    for (int l = 0; l < 8; l++) cr_expect_eq(c.layer_flags[l], l >= 5 ? LAYER_SLIDING : 0, "qwen2 layer %d", l);
    config_set_family(&c, family("phi3"));
    config_set_layers(&c, &ls);
    for (int l = 0; l < 8; l++) cr_expect_eq(c.layer_flags[l], LAYER_SLIDING, "phi3 layer %d", l);
    config_set_family(&c, family("smollm3"));
    config_set_layers(&c, &ls);
    for (int l = 0; l < 8; l++)
        cr_expect_eq(c.layer_flags[l], l % 4 == 3 ? LAYER_SLIDING | LAYER_NO_ROPE : 0, "smollm3 layer %d", l);
    const uint8_t no_rope[8] = {0, 1, 0, 0, 0, 0, 1, 0};
    ls.no_rope = no_rope;
    c.sliding_window = 0;
    config_set_layers(&c, &ls);
    for (int l = 0; l < 8; l++) cr_expect_eq(c.layer_flags[l], no_rope[l] ? LAYER_NO_ROPE : 0, "no window, layer %d", l);
    ls.no_rope = NULL;
    config_set_family(&c, family("llama"));
    c.sliding_window = 16;
    config_set_layers(&c, &ls);
    cr_expect_eq(c.sliding_window, 0);
    for (int l = 0; l < 8; l++) cr_expect_eq(c.layer_flags[l], 0, "llama layer %d", l);
}

/* Expert layers: sizes from the family's keys (or its class defaults), renormalization,
 * and Qwen's dense layers (decoder_sparse_step, mlp_only_layers). */
Test(config_json, experts) {
    cfgfile_t t;
    model_config c;
    char err[ERR_LEN];
    cr_assert_eq(parse("{\"model_type\": \"qwen3_moe\", " SIZES ", \"num_local_experts\": 16, \"num_experts_per_tok\": 4, "
                       "\"moe_intermediate_size\": 32, \"norm_topk_prob\": true, \"decoder_sparse_step\": 2, "
                       "\"mlp_only_layers\": [3]}", &c, err, &t), 0, "%s", err);
    cr_expect(c.moe && c.n_experts == 16 && c.n_experts_used == 4 && c.expert_dim == 32 && c.moe_renorm);
    for (int l = 0; l < 6; l++)
        cr_expect_eq((c.layer_flags[l] & LAYER_MOE) != 0, l == 1 || l == 5, "qwen3_moe layer %d", l);
    drop(&t);
    /* the class defaults: Qwen3-MoE 128 experts, top 8 of 768, no renormalization */
    cr_assert_eq(parse("{\"model_type\": \"qwen3_moe\", " SIZES "}", &c, err, &t), 0, "%s", err);
    cr_expect(c.n_experts == 128 && c.n_experts_used == 8 && c.expert_dim == 768 && !c.moe_renorm);
    cr_expect(c.layer_flags[0] & LAYER_MOE);
    drop(&t);
    /* Mixtral: the width is intermediate_size, always renormalized */
    cr_assert_eq(parse("{\"model_type\": \"mixtral\", " SIZES ", \"num_local_experts\": 4, \"norm_topk_prob\": false}",
                       &c, err, &t), 0, "%s", err);
    cr_expect(c.n_experts == 4 && c.n_experts_used == 2 && c.expert_dim == 128 && c.moe_renorm);
    drop(&t);
    /* Qwen2-MoE: the shared expert */
    cr_assert_eq(parse("{\"model_type\": \"qwen2_moe\", " SIZES ", \"num_experts\": 8, "
                       "\"shared_expert_intermediate_size\": 96}", &c, err, &t), 0, "%s", err);
    cr_expect(c.shared_dim == 96 && c.expert_dim == 1408);
    drop(&t);
    /* a dense family has no expert layers whatever its keys say */
    cr_assert_eq(parse("{\"model_type\": \"qwen3\", " SIZES ", \"num_experts\": 8}", &c, err, &t), 0, "%s", err);
    cr_expect(!c.moe && !(c.layer_flags[0] & LAYER_MOE));
    drop(&t);
    /* llama's MoE row is for GGUF files (Mixtral as llama with expert_count) only */
    cr_assert_eq(parse("{\"model_type\": \"llama\", " SIZES "}", &c, err, &t), 0, "%s", err);
    cr_expect(!c.moe && !(c.layer_flags[0] & LAYER_MOE));
    drop(&t);
    expect_bad("{\"model_type\": \"olmoe\", " SIZES ", \"num_experts\": 4, \"num_experts_per_tok\": 5}",
               "5 experts used per token");
    expect_bad("{\"model_type\": \"olmoe\", " SIZES ", \"clip_qkv\": 8.0}", "clip_qkv");
    expect_bad("{\"model_type\": \"qwen2_moe\", " SIZES ", \"use_sliding_window\": true}", "use_sliding_window");
    expect_bad("{\"model_type\": \"qwen3_moe\", " SIZES ", \"mlp_only_layers\": [6]}", "mlp_only_layers");
    expect_bad("{\"model_type\": \"granitemoe\", " SIZES ", \"num_local_experts\": 0}", "expert count 0");
}

/* YaRN's correction range and attention factor as transformers 5.23 computes them (FACTS-MOE 3.3): gpt-oss's
 * defaults (head_dim 64, theta 1.5e5, factor 32, original 4096, truncate false) give [8.0928, 17.3980] and
 * 1.346574; truncate true gives ggml's [8, 18]. */
Test(config_json, yarn_truncate) {
    const char *cfgs[2] = {"{\"model_type\": \"gpt_oss\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                           "\"num_attention_heads\": 4, \"intermediate_size\": 64, \"vocab_size\": 100}",
                           "{\"model_type\": \"gpt_oss\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                           "\"num_attention_heads\": 4, \"intermediate_size\": 64, \"vocab_size\": 100, "
                           "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 32, \"beta_fast\": 32, "
                           "\"beta_slow\": 1, \"original_max_position_embeddings\": 4096}}"};
    for (int i = 0; i < 2; i++) {
        cfgfile_t t;
        model_config c;
        char err[ERR_LEN];
        cr_assert_eq(parse(cfgs[i], &c, err, &t), 0, "%s", err);
        cr_expect_eq(c.rope_scaling, ROPE_SCALING_YARN);
        cr_expect_eq(c.rope_theta, 150000.0f);
        cr_expect_eq(c.rot_dim, 64);
        if (i == 0) {
            cr_expect(fabs(c.yarn_low - 8.0928) < 1e-4 && fabs(c.yarn_high - 17.3980) < 1e-4, "%g %g", c.yarn_low,
                      c.yarn_high);
        } else {
            cr_expect(c.yarn_low == 8 && c.yarn_high == 18, "%g %g", c.yarn_low, c.yarn_high);
        }
        cr_expect(fabsf(c.rope_attn_factor - 1.346574f) < 1e-6f, "%g", c.rope_attn_factor);
        cr_expect(c.layer_flags[0] & LAYER_SLIDING && !(c.layer_flags[1] & LAYER_SLIDING));
        cr_expect_eq(c.sliding_window, 128);
        cr_expect(c.moe && c.n_experts == 128 && c.n_experts_used == 4 && c.expert_dim == 64);
        cr_expect(c.swiglu_alpha == 1.702f && c.swiglu_limit == 7.0f);
        drop(&t);
    }
}
