"""The document workload of `folio-cli bench --pages` through the reference implementation.

Run on the GPU machine (transformers 5.17, torch 2.11):
    python3 reference_document_bench.py [--pages 100] [--block-tokens 60] [--block-image WxH
                                        [--blocks-per-page 20]] [--batch 256]
The full-size PaddleOCR-VL architecture with its default (random) initialisation, bfloat16, sdpa attention.
Each page has the 20 blocks of the page20 workload (1000x300, 1000x120, 600x400, 1200x80 and 800x800, four
of each), or --blocks-per-page crops of --block-image. Every block is a crop of seeded noise, resized within
the document pipeline's pixel bounds, with the same prompt layout as Folio's workload (begin of sentence,
image start, the image's tokens, image end, twelve task tokens) and exactly --block-tokens new tokens
(min_new_tokens = max_new_tokens, greedy). The blocks of all pages are grouped by shape and go through
`generate` in batches of one shape (so no padding is needed) of up to --batch blocks and
--max-batch-patches image patches. Prints one JSON object.
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


PAGE20_SHAPES = [(1000, 300), (1000, 120), (600, 400), (1200, 80), (800, 800)]
BLOCK_MIN_PIXELS = 112_896
BLOCK_MAX_PIXELS = 1_003_520
TASK_TOKENS = 12


def block_inputs(config, processor, images, rng):
    feats = processor(images=images, return_tensors="pt")
    grid = feats["image_grid_thw"]
    merge = config.vision_config.spatial_merge_size
    n_image = int(grid[0].prod()) // (merge * merge)
    rows = []
    for _ in images:
        text = rng.integers(3, 500, size=TASK_TOKENS).tolist()
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
    ap.add_argument("--block-image")
    ap.add_argument("--batch", type=int, default=256)
    # The most image patches one call encodes: 256 blocks of 784 patches ran within the H100's memory.
    ap.add_argument("--max-batch-patches", type=int, default=200_704)
    args = ap.parse_args()
    if args.block_image:
        page_blocks = [tuple(int(v) for v in args.block_image.split("x"))] * args.blocks_per_page
        workload = f"{args.blocks_per_page} x {args.block_image}"
    else:
        page_blocks = PAGE20_SHAPES * 4
        workload = "page20"

    torch.manual_seed(0)
    config = PaddleOCRVLConfig()
    model = PaddleOCRVLForConditionalGeneration._from_config(config, attn_implementation="sdpa",
                                                             torch_dtype=torch.bfloat16)
    model = model.to("cuda").eval()
    processor = PaddleOCRVLImageProcessorPil(min_pixels=BLOCK_MIN_PIXELS, max_pixels=BLOCK_MAX_PIXELS)
    rng = np.random.default_rng(11)
    batches = []
    for width, height in sorted(set(page_blocks)):
        n_shape = args.pages * page_blocks.count((width, height))
        grid = processor(images=[Image.new("RGB", (width, height))], return_tensors="pt")["image_grid_thw"]
        batch = max(1, min(args.batch, args.max_batch_patches // int(grid.prod())))
        for start in range(0, n_shape, batch):
            n = min(batch, n_shape - start)
            images = [Image.fromarray(rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8))
                      for _ in range(n)]
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
    n_patches = 0
    for inputs in batches:
        n_new += run(inputs) * inputs["input_ids"].shape[0]
        n_patches += int(inputs["image_grid_thw"].prod(dim=1).sum())
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(json.dumps({
        "implementation": f"transformers {transformers.__version__} generate, torch {torch.__version__}, bf16, sdpa",
        "gpu": torch.cuda.get_device_name(),
        "workload": workload,
        "pages": args.pages,
        "blocks_per_page": len(page_blocks),
        "image_patches": n_patches,
        "block_output_tokens": args.block_tokens,
        "batch": args.batch,
        "seconds": seconds,
        "pages_per_second": args.pages / seconds,
        "output_tokens_per_second": n_new / seconds,
        "peak_vram_bytes": torch.cuda.max_memory_allocated(),
    }, indent=2))


if __name__ == "__main__":
    main()
