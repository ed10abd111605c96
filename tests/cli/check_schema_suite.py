#!/usr/bin/env python3
"""The official JSON-Schema-Test-Suite (draft 7 and optional/format) with llmgen's JSON Schema grammar as
a validator, beside xgrammar 0.2.8's stored results (tests/gen/schema_suite.py; `make schema-suite-refs`
regenerates them with xgrammar itself). Fails if llmgen refuses a schema xgrammar compiles, or agrees
with the suite on fewer cases. About a second: the driver is C, xgrammar's side is read from the refs."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__":
    driver = os.path.join(REPO, "build", "schema_driver")
    if not os.path.exists(driver):
        sys.exit("check_schema_suite: %s is missing (make build/schema_driver)" % driver)
    sys.exit(subprocess.call([sys.executable, os.path.join(REPO, "tests", "gen", "schema_suite.py")]))
