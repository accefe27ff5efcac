#!/usr/bin/env python3
"""The reference's layout throughput beside folio-cli bench --layout-model: transformers' model of a folder
(PP-DocLayoutV2 or V3) on the GPU, 800x800 pages at each batch size, in float32 (no TF32), float32 with TF32
convolutions (torch's default) and bfloat16.

    python3 reference_layout_bench.py MODEL_DIR [BATCH,BATCH,...] [PAGES]
Prints JSON: pages/s per batch size and precision.
"""
import json
import sys
import time

import torch
from transformers import AutoModelForObjectDetection


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    model_dir = sys.argv[1]
    batches = [int(b) for b in (sys.argv[2] if len(sys.argv) > 2 else "1,8,32").split(",")]
    pages = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    torch.backends.cuda.matmul.allow_tf32 = False
    runs = []
    for precision, dtype in (("float32", torch.float32), ("tf32", torch.float32), ("bfloat16", torch.bfloat16)):
        torch.backends.cudnn.allow_tf32 = precision == "tf32"
        model = AutoModelForObjectDetection.from_pretrained(model_dir, dtype=dtype).cuda().eval()
        for batch in batches:
            x = torch.rand(batch, 3, 800, 800, device="cuda", dtype=dtype)
            with torch.no_grad():
                model(pixel_values=x)
                torch.cuda.synchronize()
                n_runs = max(1, pages // batch)
                start = time.perf_counter()
                for _ in range(n_runs):
                    model(pixel_values=x)
                torch.cuda.synchronize()
                seconds = time.perf_counter() - start
            runs.append({"precision": precision, "batch": batch,
                         "pages_per_s": n_runs * batch / seconds})
        del model
        torch.cuda.empty_cache()
    print(json.dumps({"reference": {"model": model_dir, "gpu": torch.cuda.get_device_name(), "runs": runs}},
                     indent=1))


if __name__ == "__main__":
    main()
