"""The full-size PaddleOCR-VL architecture with seeded random weights through the reference implementation, for
test-full-size. Run on the GPU machine (transformers 5.17, torch 2.11):
    python3 make_full_size_reference.py OUT_DIR
Writes OUT_DIR/model (config.json in transformers' layout and model.safetensors in bfloat16) and
OUT_DIR/reference.safetensors with, for each prompt P of "text", "one_image" and "two_images": P.input_ids,
P.pixel_values and P.grid_thw (for the image prompts), P.logits (the bfloat16 model's logits at the last prompt
position, as float32), P.greedy_tokens (64 tokens of greedy generation, bf16, sdpa) and P.margins (the top-1/top-2
logit margin of each of those steps). The weights are drawn
wider than the default initialisation, as for the fixtures, so that logits are spread and greedy choices clear;
each prompt's text tokens are drawn again (up to 4 times) until every step of its greedy generation has a
top-1/top-2 logit margin of at least MIN_MARGIN, since a tie in bfloat16 cannot decide a token. The margins
are saved and printed.
"""
import json
import os
import sys

import numpy as np
import torch
from PIL import Image
from safetensors.torch import save_file
from transformers import PaddleOCRVLConfig, PaddleOCRVLForConditionalGeneration
from transformers.models.paddleocr_vl.image_processing_pil_paddleocr_vl import PaddleOCRVLImageProcessorPil

SEED = 20261122
N_GREEDY = 64
MIN_MARGIN = 0.25


def randomize(model):
    g = torch.Generator(device="cuda").manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g, device="cuda") * 0.02)
            elif p.ndim == 1:
                p.copy_(1.0 + torch.randn(p.shape, generator=g, device="cuda") * 0.1)
            else:
                p.copy_(torch.randn(p.shape, generator=g, device="cuda") / np.sqrt(p[0].numel()))
        model.model.language_model.embed_tokens.weight.mul_(2.0)


def main():
    out = sys.argv[1]
    torch.manual_seed(SEED)
    config = PaddleOCRVLConfig()
    model = PaddleOCRVLForConditionalGeneration._from_config(config, attn_implementation="sdpa",
                                                             dtype=torch.bfloat16).to("cuda").eval()
    randomize(model)
    model.save_pretrained(os.path.join(out, "model"))

    processor = PaddleOCRVLImageProcessorPil()
    rng = np.random.default_rng(SEED)
    merge = config.vision_config.spatial_merge_size
    prompts = {"text": [], "one_image": [(224, 224)], "two_images": [(448, 112), (112, 168)]}
    ref, meta = {}, {}
    for key, sizes in prompts.items():
        ids = [config.text_config.bos_token_id]
        inputs = {}
        if sizes:
            images = [Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)) for w, h in sizes]
            feats = processor(images=images, return_tensors="pt")
            for grid in feats["image_grid_thw"]:
                ids += [config.vision_start_token_id] + [config.image_token_id] * (int(grid.prod()) // merge**2)
                ids += [config.vision_end_token_id]
            inputs["pixel_values"] = feats["pixel_values"].to("cuda", torch.bfloat16)
            inputs["image_grid_thw"] = feats["image_grid_thw"].to("cuda")
            ref[f"{key}.pixel_values"] = feats["pixel_values"].float().contiguous()
            ref[f"{key}.grid_thw"] = feats["image_grid_thw"].long().contiguous()
        prefix = ids
        for attempt in range(4):
            ids = prefix + rng.integers(3, 100000, size=24).tolist()
            input_ids = torch.tensor([ids], device="cuda")
            inputs["input_ids"] = input_ids
            inputs["attention_mask"] = torch.ones_like(input_ids)
            inputs["mm_token_type_ids"] = (input_ids == config.image_token_id).long()
            with torch.no_grad():
                logits = model(**inputs).logits[0, -1].float()
                gen = model.generate(**inputs, max_new_tokens=N_GREEDY, do_sample=False, output_scores=True,
                                     return_dict_in_generate=True)
            scores = torch.stack(gen.scores, dim=0)[:, 0, :].float()
            top2 = scores.topk(2, dim=-1).values
            margin = float((top2[:, 0] - top2[:, 1]).min())
            if margin >= MIN_MARGIN:
                break
        ref[f"{key}.input_ids"] = input_ids[0].long().cpu().contiguous()
        ref[f"{key}.logits"] = logits.cpu().contiguous()
        ref[f"{key}.greedy_tokens"] = gen.sequences[0, len(ids):].long().cpu().contiguous()
        ref[f"{key}.margins"] = (top2[:, 0] - top2[:, 1]).cpu().contiguous()
        meta[key] = {"n_prompt": len(ids), "attempts": attempt + 1, "min_margin": margin}
    save_file(ref, os.path.join(out, "reference.safetensors"))
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
