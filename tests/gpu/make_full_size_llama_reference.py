"""The full-size DeepSeek-R1-Distill-Llama-8B architecture with seeded random weights through the reference
implementation, for test-full-size's Llama suite. Run on the GPU machine (transformers 5.17, torch 2.11) from
the repository root:
    python3 tests/gpu/make_full_size_llama_reference.py OUT_DIR [N_LAYERS]
Every width is the released model's (hidden size 4096, 32 query heads over 8 K/V heads of 128, intermediate
14336, a vocabulary of 128256, llama3 rotary scaling with factor 8 over 8192 original positions), with its 32
layers unless N_LAYERS says fewer. The prompts are tokenized with the Llama fixture's byte-level tokenizer and
chat template (tests/fixtures/llama/llama-tiny), whose special tokens the config names. Writes OUT_DIR/model
(config.json, the weights in bfloat16 in shards, the tokenizer files) and OUT_DIR/reference.safetensors with,
for each prompt P of "chat" and "long" (about 3,000 tokens, so that the scaled frequencies turn far):
P.input_ids, P.logits (the bfloat16 model's logits at the last prompt position, as float32), P.greedy_tokens
(32 greedy tokens, bf16, sdpa) and P.margins (the top-1/top-2 logit margin of each of those steps).
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

SEED = 20261203
N_GREEDY = 32
TINY = os.path.join("tests", "fixtures", "llama", "llama-tiny")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def llama8b_config(n_layers, bos_token_id=128000, eos_token_id=128001):
    """DeepSeek-R1-Distill-Llama-8B's config.json as transformers reads it, with n_layers decoder layers."""
    return LlamaConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=n_layers,
        num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
        rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
        bos_token_id=bos_token_id, eos_token_id=eos_token_id,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})


def make_config(n_layers, tokenizer):
    """The 8B config with the fixture tokenizer's special tokens."""
    return llama8b_config(n_layers, tokenizer.bos_token_id, tokenizer.convert_tokens_to_ids("<|eot_id|>"))


def randomize(model):
    """Wider than the default initialisation, so that logits are spread: matrices with unit-variance outputs,
    norms near 1."""
    g = torch.Generator(device="cuda").manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.copy_(1.0 + torch.randn(p.shape, generator=g, device="cuda") * 0.1)
            else:
                p.copy_(torch.randn(p.shape, generator=g, device="cuda") / np.sqrt(p.shape[-1]))
        model.model.embed_tokens.weight.mul_(2.0)


def greedy(model, ids):
    """The last prompt position's logits and N_GREEDY argmax steps through the model's cache, end-of-sequence
    tokens included (nothing masked), with each step's top-1/top-2 margin."""
    tokens, margins = [], []
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        first = out.logits[0, -1].float()
        for _ in range(N_GREEDY):
            top = out.logits[0, -1].float().topk(2)
            tokens.append(int(top.indices[0]))
            margins.append(float(top.values[0] - top.values[1]))
            out = model(input_ids=torch.tensor([[tokens[-1]]], device="cuda"), past_key_values=out.past_key_values,
                        use_cache=True)
    return first, tokens, margins


def main():
    out = sys.argv[1]
    n_layers = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    model_dir = os.path.join(out, "model")
    os.makedirs(model_dir, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copy(os.path.join(TINY, name), model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    torch.manual_seed(SEED)
    model = LlamaForCausalLM._from_config(make_config(n_layers, tokenizer), attn_implementation="sdpa",
                                          dtype=torch.bfloat16).to("cuda").eval()
    randomize(model)
    model.save_pretrained(model_dir, max_shard_size="4GB")

    with open(os.path.join(TINY, "..", "reference.json")) as f:
        corpus = "\n\n".join(p["messages"][-1]["content"] for p in json.load(f)["prompts"].values())
    prompts = {"chat": "Describe the weather today in three short sentences.",
               "long": ("Summarise these notes.\n\n" + (corpus + "\n\n") * 400)}
    ref, meta = {}, {"n_layers": n_layers}
    for key, question in prompts.items():
        text = tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                             add_generation_prompt=True)
        ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"][:, :3000].to("cuda")
        logits, tokens, margins = greedy(model, ids)
        ref[f"{key}.input_ids"] = ids[0].long().cpu().contiguous()
        ref[f"{key}.logits"] = logits.cpu().contiguous()
        ref[f"{key}.greedy_tokens"] = torch.tensor(tokens, dtype=torch.int64)
        ref[f"{key}.margins"] = torch.tensor(margins, dtype=torch.float32)
        meta[key] = {"n_prompt": int(ids.shape[1]), "min_margin": min(margins), "greedy_tokens": tokens}
    save_file(ref, os.path.join(out, "reference.safetensors"))
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
