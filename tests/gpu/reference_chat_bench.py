"""The chat benchmark of `folio-cli bench --family ernie-4.5-vl|llama` through the reference implementation.

Run on the GPU machine (transformers 5.17, torch 2.11):
    python3 reference_chat_bench.py [--family ernie-4.5-vl|llama] [--num-layers N] [--prefill-tokens 1024]
                                    [--decode-tokens 64] [--batch 1,8,32]
The full-size Ernie4_5_VLMoeForConditionalGeneration architecture (28 decoder layers), or LlamaForCausalLM
as DeepSeek-R1-Distill-Llama-8B configures it (32 layers, llama3 rotary scaling, untied head), or the first
--num-layers decoder layers, with its default (random) initialisation, bfloat16, sdpa attention. Prefill: one prompt of --prefill-tokens
text tokens, timed to its first new token. Decode: at each batch size, prompts of 16 distinct text tokens and
exactly --decode-tokens new tokens (greedy, min_new_tokens = max_new_tokens), timed after the first token
(the prefill's time, measured at one new token, is taken off). Prints one JSON object.
"""
import argparse
import json
import time

import torch
import transformers
from transformers import Ernie4_5_VLMoeConfig, Ernie4_5_VLMoeForConditionalGeneration, LlamaForCausalLM

from make_full_size_llama_reference import llama8b_config


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=["ernie-4.5-vl", "llama"], default="ernie-4.5-vl")
    ap.add_argument("--num-layers", type=int, default=None)
    ap.add_argument("--prefill-tokens", type=int, default=1024)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--batch", default="1,8,32")
    args = ap.parse_args()

    torch.manual_seed(0)
    if args.family == "llama":
        config = llama8b_config(args.num_layers or 32)
        text_config, model_class = config, LlamaForCausalLM
    else:
        config = Ernie4_5_VLMoeConfig()
        text_config, model_class = config.text_config, Ernie4_5_VLMoeForConditionalGeneration
        text_config.num_hidden_layers = args.num_layers or 28
        if getattr(text_config, "mlp_layer_types", None) is not None:
            text_config.mlp_layer_types = text_config.mlp_layer_types[: text_config.num_hidden_layers]
    with torch.device("cuda"):
        model = model_class._from_config(config, attn_implementation="sdpa", torch_dtype=torch.bfloat16)
    model = model.eval()
    vocab = text_config.vocab_size

    def generate(ids, n_new):
        ids = ids.to("cuda")
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n_new,
                           min_new_tokens=n_new, do_sample=False)
        torch.cuda.synchronize()

    def timed(ids, n_new):
        start = time.perf_counter()
        generate(ids, n_new)
        return time.perf_counter() - start

    prompt = (torch.arange(args.prefill_tokens) % vocab).unsqueeze(0)
    generate(prompt, 1)  # warm-up
    prefill_seconds = timed(prompt, 1)
    decode = []
    for batch in (int(b) for b in args.batch.split(",")):
        ids = (torch.arange(batch * 16) % vocab).reshape(batch, 16)
        generate(ids, 2)  # warm-up at this shape
        first = timed(ids, 1)
        total = timed(ids, args.decode_tokens)
        n_tokens = batch * (args.decode_tokens - 1)
        decode.append({"batch": batch, "n_tokens": n_tokens, "seconds": total - first,
                       "tokens_per_second": n_tokens / (total - first)})
    print(json.dumps({
        "implementation": f"transformers {transformers.__version__} generate, torch {torch.__version__}, bf16, sdpa",
        "gpu": torch.cuda.get_device_name(),
        "family": args.family,
        "num_hidden_layers": text_config.num_hidden_layers,
        "n_params": sum(p.numel() for p in model.parameters()),
        "prefill": {"tokens": args.prefill_tokens, "seconds": prefill_seconds,
                    "tokens_per_second": args.prefill_tokens / prefill_seconds},
        "decode": decode,
        "peak_vram_bytes": torch.cuda.max_memory_allocated(),
    }, indent=2))


if __name__ == "__main__":
    main()
