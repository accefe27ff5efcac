"""The document workload of `folio-cli bench --pages` through the reference implementation.

Run on the GPU machine (transformers 5.17, torch 2.11):
    python3 reference_document_bench.py [--pages 100] [--blocks-per-page 20] [--block-tokens 60]
                                        [--block-image 448x112] [--batch 256]
The full-size PaddleOCR-VL architecture with its default (random) initialisation, bfloat16, sdpa attention.
Every block is a crop of seeded noise with the same prompt layout as Folio's workload (begin of sentence,
image start, the image's tokens, image end, six text tokens) and exactly --block-tokens new tokens
(min_new_tokens = max_new_tokens, greedy). Blocks go through `generate` in batches of --batch, all of one
shape, so no padding is needed. Prints one JSON object.
"""
import argparse
import json
import time

import numpy as np
import torch
import transformers
from PIL import Image
from transformers import PaddleOCRVLConfig, PaddleOCRVLForConditionalGeneration
from transformers.models.paddleocr_vl.image_processing_pil_paddleocr_vl import PaddleOCRVLImageProcessorPil


def block_inputs(config, processor, images, rng):
    feats = processor(images=images, return_tensors="pt")
    grid = feats["image_grid_thw"]
    merge = config.vision_config.spatial_merge_size
    n_image = int(grid[0].prod()) // (merge * merge)
    rows = []
    for _ in images:
        text = rng.integers(3, 500, size=6).tolist()
        rows.append([config.text_config.bos_token_id, config.vision_start_token_id] +
                    [config.image_token_id] * n_image + [config.vision_end_token_id] + text)
    ids = torch.tensor(rows, dtype=torch.long)
    mm = torch.zeros_like(ids)
    mm[:, 2:2 + n_image] = 1
    return {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "mm_token_type_ids": mm,
        "pixel_values": feats["pixel_values"],
        "image_grid_thw": grid,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--blocks-per-page", type=int, default=20)
    ap.add_argument("--block-tokens", type=int, default=60)
    ap.add_argument("--block-image", default="448x112")
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()
    width, height = (int(v) for v in args.block_image.split("x"))

    torch.manual_seed(0)
    config = PaddleOCRVLConfig()
    model = PaddleOCRVLForConditionalGeneration._from_config(config, attn_implementation="sdpa",
                                                             torch_dtype=torch.bfloat16)
    model = model.to("cuda").eval()
    processor = PaddleOCRVLImageProcessorPil()
    rng = np.random.default_rng(11)
    n_blocks = args.pages * args.blocks_per_page
    batches = []
    for start in range(0, n_blocks, args.batch):
        n = min(args.batch, n_blocks - start)
        images = [Image.fromarray(rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)) for _ in range(n)]
        batches.append(block_inputs(config, processor, images, rng))

    def run(inputs):
        inputs = {k: v.to("cuda") for k, v in inputs.items()}
        inputs["pixel_values"] = inputs["pixel_values"].to(torch.bfloat16)
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=args.block_tokens, min_new_tokens=args.block_tokens,
                                 do_sample=False)
        return out.shape[1] - inputs["input_ids"].shape[1]

    warm = {k: v[:2] if k in ("input_ids", "attention_mask", "mm_token_type_ids", "image_grid_thw") else v
            for k, v in batches[0].items()}
    warm["pixel_values"] = batches[0]["pixel_values"][: int(batches[0]["image_grid_thw"][:2].prod(dim=1).sum())]
    run(warm)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    n_new = 0
    for inputs in batches:
        n_new += run(inputs) * inputs["input_ids"].shape[0]
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(json.dumps({
        "implementation": f"transformers {transformers.__version__} generate, torch {torch.__version__}, bf16, sdpa",
        "gpu": torch.cuda.get_device_name(),
        "pages": args.pages,
        "blocks_per_page": args.blocks_per_page,
        "block_image": args.block_image,
        "block_prompt_tokens": int(batches[0]["input_ids"].shape[1]),
        "block_output_tokens": args.block_tokens,
        "batch": args.batch,
        "seconds": seconds,
        "pages_per_second": args.pages / seconds,
        "output_tokens_per_second": n_new / seconds,
        "peak_vram_bytes": torch.cuda.max_memory_allocated(),
    }, indent=2))


if __name__ == "__main__":
    main()
