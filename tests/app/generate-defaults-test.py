#!/usr/bin/env python3
"""folio-cli generate with the ERNIE-4.5-VL fixture, whose generation_config.json asks for temperature 0.2 and
top_p 0.8: the loaded model says so on stderr; sampling flags left out take those values (the same text as
giving them, seed for seed), flags given win, and --generation-config vllm leaves Folio's own default, greedy
decoding (the same text as --temperature 0).

Usage: generate-defaults-test.py FOLIO_CLI ERNIE_MODEL_DIR
"""
import subprocess
import sys


def generate(folio_cli, model, *flags):
    result = subprocess.run([folio_cli, "generate", "--model", model, "--prompt", "What is in the picture?", "--max-tokens", "12",
                             "--max-model-len", "1024", *flags], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise SystemExit("FAILED: folio-cli generate %s exited %d:\n%s" % (" ".join(flags), result.returncode,
                                                                           result.stderr))
    return result.stdout, result.stderr


def check(condition, what):
    if not condition:
        raise SystemExit("FAILED: " + what)
    print("ok: " + what)


def main():
    folio_cli, model = sys.argv[1:3]
    _, stderr = generate(folio_cli, model, "--seed", "1")
    check("request defaults: do_sample true, temperature 0.2, top_p 0.8, eos 601" in stderr,
          "the loaded model's request defaults are reported")
    differing = 0
    for seed in ("1", "2", "3", "4"):
        left_out, _ = generate(folio_cli, model, "--seed", seed)
        given, _ = generate(folio_cli, model, "--seed", seed, "--temperature", "0.2", "--top-p", "0.8")
        check(left_out == given, "seed %s: the folder's temperature and top_p apply where the flags are left out"
              % seed)
        hot, _ = generate(folio_cli, model, "--seed", seed, "--temperature", "1.5", "--top-p", "1")
        differing += hot != left_out
    check(differing > 0, "flags given win over the folder's values")
    greedy, _ = generate(folio_cli, model, "--temperature", "0")
    check(greedy.strip() != "", "the greedy answer has text")
    for seed in ("1", "2"):
        plain, stderr = generate(folio_cli, model, "--seed", seed, "--generation-config", "vllm")
        check(plain == greedy and "request defaults" not in stderr,
              "seed %s: --generation-config vllm decodes greedily, without the folder's defaults" % seed)


if __name__ == "__main__":
    main()
