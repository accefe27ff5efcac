"""folio-cli generate --document with the tiny Llama model on the CPU, as a user runs it: a document
folio-cli ocr wrote and a text file opening the prompt (the prompt grows by them), a text longer than the
context given in part, a --messages request, and files that cannot be asked about refused by name before the
model loads; with ERNIE_DIR, images attached beside a long text taking their room from its part.
Usage: generate-document-test.py FOLIO_CLI LLAMA_DIR [ERNIE_DIR IMAGE]"""
import json
import os
import re
import subprocess
import sys
import tempfile


def check(ok, what):
    if not ok:
        print("FAILED: " + what)
        sys.exit(1)
    print("ok: " + what)


def generate(cli, model, *args):
    out = subprocess.run([cli, "generate", "--model", model, "--device", "cpu", "--max-tokens", "4", *args],
                         capture_output=True, text=True, timeout=600)
    return out.returncode, out.stdout, out.stderr


def prompt_tokens(stderr):
    match = re.search(r"request 0: \d+ tokens \([a-z]+\), prompt (\d+) tokens", stderr)
    return int(match.group(1)) if match else -1


def main():
    with tempfile.TemporaryDirectory(prefix="folio-generate-document-") as folder:
        run(sys.argv[1], sys.argv[2], folder)
        if len(sys.argv) > 4:
            run_with_images(sys.argv[1], sys.argv[3], sys.argv[4], folder)
    print("PASSED")


def run(cli, model, folder):
    report = os.path.join(folder, "report.json")
    with open(report, "w") as f:
        json.dump([{"page_index": 0, "parsing_res_list": [
                       {"block_label": "text", "block_content": "Sales grew by 12% in the north.", "block_id": 3}]},
                   {"page_index": 1, "parsing_res_list": [
                       {"block_label": "table", "block_content": "<table><tr><td>North</td><td>40</td></tr></table>",
                        "block_id": 0}]}], f)
    question = "Where did sales grow?"

    code, _, plain = generate(cli, model, "--prompt", question)
    check(code == 0 and prompt_tokens(plain) > 0, "a plain prompt: " + plain[-300:])
    code, _, asked = generate(cli, model, "--prompt", question, "--document", report)
    check(code == 0, "a document folio-cli ocr wrote: " + asked[-500:])
    check(prompt_tokens(asked) > prompt_tokens(plain) + 40,
          "its blocks open the prompt (%d against %d tokens)" % (prompt_tokens(asked), prompt_tokens(plain)))
    check("request 0: given pages 1-2; cites" in asked, "stderr names the pages given: " + asked[-400:])

    long_text = os.path.join(folder, "manual.txt")
    with open(long_text, "w") as f:
        paragraphs = ["Paragraph %d is filler that says nothing about the question at all." % i for i in range(3000)]
        paragraphs.insert(2345, "The warranty of the pump lasts two years.")
        f.write("\n\n".join(paragraphs))
    code, _, cut = generate(cli, model, "--prompt", "How long is the pump's warranty?", "--document", long_text)
    check(code == 0 and "request 0: given page 1 (1 in part)" in cut,
          "a text longer than the context is given in part: " + cut[-400:])

    messages = os.path.join(folder, "chat.json")
    with open(messages, "w") as f:
        json.dump([{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": question}], f)
    code, _, chat = generate(cli, model, "--messages", messages, "--document", report)
    check(code == 0 and "request 0: given pages 1-2" in chat, "a --messages request: " + chat[-400:])

    for name, content, expected in (("missing.txt", None, "missing.txt"),
                                    ("other.json", '{"pages": 1}', "other.json has no parsing_res_list"),
                                    ("blank.txt", "\n\n  \n", "blank.txt: no text to answer from")):
        path = os.path.join(folder, name)
        if content is not None:
            with open(path, "w") as f:
                f.write(content)
        code, _, err = generate(cli, model, "--prompt", question, "--document", path)
        check(code == 1 and expected in err and "loading:" not in err,
              "%s is refused by name before the model loads: %s" % (name, err[-300:]))

    code, _, err = generate(cli, model, "--prompt", question, "--document", report, "--max-tokens", "1000000")
    check(code == 1 and "report.json: not even one block fits" in err,
          "no room for the document is said: " + err[-300:])


def run_with_images(cli, model, image, folder):
    long_text = os.path.join(folder, "manual.txt")
    question = "How long is the pump's warranty?"

    def ask(n_images, document):
        messages = os.path.join(folder, "images-%d.json" % n_images)
        content = [{"type": "image_url", "image_url": {"url": image}}] * n_images
        with open(messages, "w") as f:
            json.dump([{"role": "user", "content": content + [{"type": "text", "text": question}]}], f)
        args = ["--messages", messages] + (["--document", long_text] if document else [])
        code, _, err = generate(cli, model, *args)
        check(code == 0, "%d images%s: %s" % (n_images, " and the text" if document else "", err[-400:]))
        return prompt_tokens(err), err

    images = ask(2, False)[0] - ask(0, False)[0]
    check(images > 20, "two images take %d tokens" % images)
    alone, _ = ask(0, True)
    beside, err = ask(2, True)
    check("request 0: given page 1 (1 in part)" in err, "the text given in part beside images: " + err[-300:])
    check(beside - alone < images / 2,
          "the images' %d tokens come out of the text's part (%d against %d tokens)" % (images, beside, alone))


if __name__ == "__main__":
    main()
