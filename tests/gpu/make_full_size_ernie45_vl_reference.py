"""The full-width ERNIE-4.5-VL-28B-A3B architecture with seeded random weights through the reference
implementation, for test-full-size's ERNIE-4.5-VL suite. Run on the GPU machine (transformers 5.17, torch 2.11)
from the repository root:
    python3 tests/gpu/make_full_size_ernie45_vl_reference.py OUT_DIR [N_LAYERS]
Every width is the released model's (Ernie4_5_VLMoeConfig's defaults: hidden size 2560, 64 text and 64 vision
experts a layer, 6 chosen, the full vision transformer and resampler); only the decoder is cut to its first
N_LAYERS layers (default 3: the dense layer 0, then two mixture-of-experts layers), since the call that draws,
saves and runs it must also load it into Folio. The prompts are tokenized with the ERNIE-4.5-VL fixture's
tokenizer (tests/fixtures/ernie45-vl/ernie45-vl-tiny), whose special tokens the config names, so the ids are
those of a real chat prompt through the processor. Writes OUT_DIR/model (config.json in transformers' layout,
the weights in bfloat16, the tokenizer files) and OUT_DIR/reference.safetensors with, for each prompt P of
"text", "one_image" and "two_images": P.input_ids, P.pixel_values and P.grid_thw (image prompts), P.logits (the
bfloat16 model's logits at the last prompt position, as float32), P.greedy_tokens (32 greedy tokens, bf16,
sdpa) and P.margins (the top-1/top-2 logit margin of each of those steps).
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
from PIL import Image
from safetensors.torch import save_file
from transformers import Ernie4_5_VLMoeConfig, Ernie4_5_VLMoeForConditionalGeneration, LlamaTokenizer
from transformers.models.ernie4_5_vl_moe.image_processing_pil_ernie4_5_vl_moe import (
    Ernie4_5_VLMoeImageProcessorPil,
)
from transformers.models.ernie4_5_vl_moe.processing_ernie4_5_vl_moe import Ernie4_5_VLMoeProcessor
from transformers.models.ernie4_5_vl_moe.video_processing_ernie4_5_vl_moe import Ernie4_5_VLMoeVideoProcessor

SEED = 20261202
N_GREEDY = 32
TINY = os.path.join("tests", "fixtures", "ernie45-vl", "ernie45-vl-tiny")
TOKENIZER_FILES = ("tokenizer.model", "tokenizer_config.json", "chat_template.jinja")


def make_config(n_layers):
    with open(os.path.join(TINY, "config.json")) as f:
        tiny = json.load(f)
    text = Ernie4_5_VLMoeConfig().text_config.to_dict()
    text["num_hidden_layers"] = n_layers
    if text.get("mlp_layer_types"):
        text["mlp_layer_types"] = text["mlp_layer_types"][:n_layers]
    text["bos_token_id"] = tiny["text_config"]["bos_token_id"]
    text["eos_token_id"] = tiny["text_config"]["eos_token_id"]
    ids = {k: tiny[k] for k in ("image_token_id", "image_start_token_id", "image_end_token_id", "video_token_id",
                                "video_start_token_id", "video_end_token_id")}
    return Ernie4_5_VLMoeConfig(text_config=text, **ids)


def randomize(model):
    """As the fixtures draw them: wider than the default initialisation, so that logits are spread, with the
    routers' score-correction biases drawn so that they take part in the choice of experts."""
    g = torch.Generator(device="cuda").manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("e_score_correction_bias"):
                p.copy_(torch.rand(p.shape, generator=g, device="cuda") * 0.2)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g, device="cuda") * 0.02)
            elif p.ndim == 1:
                p.copy_(1.0 + torch.randn(p.shape, generator=g, device="cuda") * 0.1)
            else:
                p.copy_(torch.randn(p.shape, generator=g, device="cuda") / np.sqrt(p.shape[-1]))
        model.model.language_model.embed_tokens.weight.mul_(2.0)


def main():
    out = sys.argv[1]
    n_layers = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    model_dir = os.path.join(out, "model")
    os.makedirs(model_dir, exist_ok=True)
    torch.manual_seed(SEED)
    config = make_config(n_layers)
    model = Ernie4_5_VLMoeForConditionalGeneration._from_config(config, attn_implementation="sdpa",
                                                               dtype=torch.bfloat16).to("cuda").eval()
    randomize(model)
    model.save_pretrained(model_dir)
    for name in TOKENIZER_FILES:
        shutil.copy(os.path.join(TINY, name), model_dir)
    image_processor = Ernie4_5_VLMoeImageProcessorPil()
    image_processor.save_pretrained(model_dir)
    tokenizer = LlamaTokenizer.from_pretrained(model_dir)
    with open(os.path.join(model_dir, "chat_template.jinja")) as f:
        template = f.read()
    processor = Ernie4_5_VLMoeProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                        video_processor=Ernie4_5_VLMoeVideoProcessor(), chat_template=template)

    rng = np.random.default_rng(SEED)
    prompts = {"text": ([], "Describe the weather today in three short sentences."),
               "one_image": ([(224, 224)], "What is shown in this picture?"),
               "two_images": ([(448, 112), (112, 168)], "Compare the two pictures.")}
    ref, meta = {}, {"n_layers": n_layers}
    for key, (sizes, question) in prompts.items():
        images = [Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)) for w, h in sizes]
        content = [{"type": "image"} for _ in images] + [{"type": "text", "text": question}]
        rendered = tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                                 add_generation_prompt=True, chat_template=template,
                                                 enable_thinking=False)
        inputs = processor(images=images or None, text=rendered, return_tensors="pt").to("cuda")
        if "pixel_values" in inputs:
            ref[f"{key}.pixel_values"] = inputs["pixel_values"].float().cpu().contiguous()
            ref[f"{key}.grid_thw"] = inputs["image_grid_thw"].long().cpu().contiguous()
            inputs["pixel_values"] = inputs["pixel_values"].to(torch.bfloat16)
        with torch.no_grad():
            logits = model(**inputs).logits[0, -1].float()
            gen = model.generate(**inputs, max_new_tokens=N_GREEDY, do_sample=False, output_scores=True,
                                 return_dict_in_generate=True)
        scores = torch.stack(gen.scores, dim=0)[:, 0, :].float()
        top2 = scores.topk(2, dim=-1).values
        ids = inputs["input_ids"][0]
        ref[f"{key}.input_ids"] = ids.long().cpu().contiguous()
        ref[f"{key}.logits"] = logits.cpu().contiguous()
        ref[f"{key}.greedy_tokens"] = gen.sequences[0, ids.shape[0]:].long().cpu().contiguous()
        ref[f"{key}.margins"] = (top2[:, 0] - top2[:, 1]).cpu().contiguous()
        meta[key] = {"n_prompt": int(ids.shape[0]), "min_margin": float((top2[:, 0] - top2[:, 1]).min())}
    save_file(ref, os.path.join(out, "reference.safetensors"))
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
