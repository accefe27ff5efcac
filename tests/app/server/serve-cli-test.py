#!/usr/bin/env python3
"""folio-cli serve as a user starts it, driven by Python's standard library.

Usage: serve-cli-test.py FOLIO_CLI MODEL_DIR OPENAI_CLIENT_PY
Starts the server on free ports with an API key and a served model name, waits for its "serving" line, asks
for the models, a chat completion whole and streamed (through openai-client.py), a request without the key,
the health check and the metrics, then stops it with Ctrl-C (SIGINT) and expects exit status 0. Then starts it
on every interface without a key (a warning, the metrics still on 127.0.0.1), on IPv6's loopback where the
machine has one (printed in brackets), and stops it with SIGTERM while a stream runs: the stream ends with an
error event saying the server is stopping, and the server exits 0 within seconds.
"""
import http.client
import os
import shutil
import socket
import threading
import time
import base64
import json
import re
import signal
import struct
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zlib


def png(width, height):
    rows = b"".join(b"\x00" + bytes(((x * 7 + y * 3) % 256) for x in range(width) for _ in range(3))
                    for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def get(url, key=None):
    request = urllib.request.Request(url, headers={"Authorization": "Bearer " + key} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def check(condition, what):
    if not condition:
        raise SystemExit("FAILED: " + what)
    print("ok: " + what)


def main():
    folio_cli, model_dir, client = sys.argv[1:4]
    key = "test-key"
    server = subprocess.Popen([folio_cli, "serve", "--model", model_dir, "--port", "0", "--metrics-port", "0",
                               "--api-key", key, "--served-model-name", "PaddleOCR-VL-0.9B",
                               "--max-model-len", "4096"],
                              stderr=subprocess.PIPE, text=True)
    try:
        port = metrics_port = None
        for line in server.stderr:
            sys.stderr.write(line)
            match = re.search(r"serving PaddleOCR-VL-0\.9B on http://127\.0\.0\.1:(\d+)/v1, "
                              r"metrics on http://127\.0\.0\.1:(\d+)/metrics", line)
            if match:
                port, metrics_port = int(match.group(1)), int(match.group(2))
                break
        check(port is not None, "the server says where it listens")
        base = "http://127.0.0.1:%d" % port

        status, body = get(base + "/v1/models", key)
        check(status == 200 and json.loads(body)["data"][0]["id"] == "PaddleOCR-VL-0.9B", "GET /v1/models")
        status, _ = get(base + "/v1/models")
        check(status == 401, "a request without the key is refused")
        status, _ = get(base + "/health")
        check(status == 200, "GET /health")

        image = "data:image/png;base64," + base64.b64encode(png(64, 32)).decode()
        request = {"model": "PaddleOCR-VL-0.9B", "max_completion_tokens": 12, "temperature": 1, "top_p": 0,
                   "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image}},
                                                             {"type": "text", "text": "OCR:"}]}]}
        answers = []
        for stream in (False, True):
            with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                json.dump(dict(request, stream=stream), f)
                f.flush()
                out = subprocess.run([sys.executable, client, base + "/v1/chat/completions", f.name, key],
                                     capture_output=True, text=True, timeout=120)
            check(out.returncode == 0, "chat completion, stream=%s: %s" % (stream, out.stdout + out.stderr))
            answers.append(json.loads(out.stdout))
        check(answers[0]["text"] == answers[1]["text"] and answers[0]["completion_tokens"] >= 1,
              "the stream adds up to the whole answer")

        status, text = get("http://127.0.0.1:%d/metrics" % metrics_port)
        check(status == 200 and re.search(r"^fastdeploy:request_success_total 2$", text, re.M) is not None,
              "GET /metrics counts the two requests")

        node_client(base, key, image, answers[0], metrics_port)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            rest = server.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            server.kill()
            raise SystemExit("FAILED: the server did not stop on SIGINT")
        sys.stderr.write(rest)
    check(server.returncode == 0, "Ctrl-C stops the server with exit status 0 (got %s)" % server.returncode)
    check("interrupted, stopping" in rest, "the server says it stops")

    exposed_and_terminated(folio_cli, model_dir)
    port_in_use(folio_cli, model_dir)
    reasoning_parser(folio_cli, model_dir, client, image)
    if len(sys.argv) > 4:
        llama_reasoning(folio_cli, sys.argv[4], model_dir)
    if socket.has_ipv6:
        try:
            with socket.socket(socket.AF_INET6) as s6:
                s6.bind(("::1", 0))
            ipv6 = True
        except OSError:
            ipv6 = False
        if ipv6:
            ipv6_loopback(folio_cli, model_dir)
        else:
            print("skipped: this machine has no IPv6 loopback")
    return 0


def node_client(base, key, image, python_answer, metrics_port):
    """The openai npm package as the client, where the machine has it (NODE_PATH may name its node_modules)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai-node-client.cjs")
    found = shutil.which("node") and subprocess.run(["node", "-e", "require('openai')"],
                                                    capture_output=True).returncode == 0
    if not found:
        print("skipped: the openai npm package is not installed (npm install openai, NODE_PATH=.../node_modules)")
        return
    out = subprocess.run(["node", script, base + "/v1", "PaddleOCR-VL-0.9B", key, image], capture_output=True,
                         text=True, timeout=300)
    check(out.returncode == 0, "the openai npm client runs: " + out.stderr[-2000:])
    result = json.loads(out.stdout)
    check(result["whole"]["text"] == result["streamed"]["text"] and len(result["whole"]["text"]) >
          len(python_answer["text"]), "the openai npm client gets the same answer, whole and streamed")
    check(result["whole"]["finish"] == "length" and result["whole"]["completion_tokens"] > 12,
          "max_completion_tokens 8192 is lowered to what the context leaves")
    check(result["streamed"]["completion_tokens"] == result["whole"]["completion_tokens"],
          "the streamed usage counts the same tokens")
    check(result["retrieved"] == "PaddleOCR-VL-0.9B", "models.retrieve(id)")
    document = result["document"]
    check(document["pages"] == [0] and document["citations"], "a document asked through the npm client: %s" % document)
    check(document["streamed_pages"] == [0] and document["streamed_citations"],
          "streamed through the npm client, the last chunk has the pages and the citations: %s" % document)
    check(0 < document["cached"] < document["prompt_tokens"],
          "asked again, the document's prompt is found in the prefix cache: %s" % document)
    check(result["over_context"] == {"status": 400, "code": "context_length_exceeded"},
          "a prompt that leaves no room: 400 context_length_exceeded")
    check(result["aborted"] != "finished", "the client aborts a long request")
    cancelled = None
    for _ in range(100):
        _, text = get("http://127.0.0.1:%d/metrics" % metrics_port)
        match = re.search(r"^folio:request_cancelled_total (\d+)$", text, re.M)
        cancelled = int(match.group(1)) if match else None
        if cancelled:
            break
        time.sleep(0.1)
    check(cancelled == 1, "the aborted request is cancelled and counted so (%s)" % cancelled)


def start(folio_cli, model_dir, *flags):
    """The server and the lines it printed up to its "serving" line, and that line's match."""
    server = subprocess.Popen([folio_cli, "serve", "--model", model_dir, "--port", "0", "--metrics-port", "0",
                               "--max-model-len", "4096"] + list(flags), stderr=subprocess.PIPE, text=True)
    lines = []
    for line in server.stderr:
        sys.stderr.write(line)
        lines.append(line)
        match = re.search(r"serving \S+ on http://(\S+):(\d+)/v1, metrics on http://(\S+):(\d+)/metrics", line)
        if match:
            # The warnings follow the serving line.
            server.stderr_reader = threading.Thread(target=lambda: lines.extend(server.stderr), daemon=True)
            server.stderr_reader.start()
            return server, lines, match
    raise SystemExit("FAILED: the server did not start: " + "".join(lines))


def port_in_use(folio_cli, model_dir):
    """A port that is taken is said before the model loads, for the API and the metrics alike."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        for flags, what, option in ((["--port", str(port)], "API", "--port"),
                                    (["--port", "0", "--metrics-port", str(port)], "metrics", "--metrics-port")):
            out = subprocess.run([folio_cli, "serve", "--model", model_dir, "--max-model-len", "4096"] + flags,
                                 capture_output=True, text=True, timeout=120)
            check(out.returncode == 1 and
                  "cannot listen on 127.0.0.1:%d (%s)" % (port, what) in out.stderr and
                  "choose another with " + option in out.stderr,
                  "a %s port in use is refused, naming it: %s" % (what, out.stderr[-500:]))
            check("loading:" not in out.stderr, "a %s port in use is said before the model loads" % what)


def exposed_and_terminated(folio_cli, model_dir):
    server, lines, match = start(folio_cli, model_dir, "--host", "0.0.0.0", "--log-requests")
    try:
        check(match.group(1) == "0.0.0.0" and match.group(3) == "127.0.0.1",
              "--host 0.0.0.0 serves the API there and keeps the metrics on 127.0.0.1")
        port = int(match.group(2))
        time.sleep(0.3)
        check(any("warning: listening on 0.0.0.0 without --api-key" in line for line in lines),
              "a server open to the network without --api-key warns")

        # A stream that runs for a while, read as it comes.
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("POST", "/v1/completions",
                           json.dumps({"prompt": "Hello", "max_tokens": 4000, "ignore_eos": True, "stream": True}),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        check(response.status == 200, "a long stream starts")
        check(response.readline().startswith(b"data: "), "the stream's first event comes")
        started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        events = response.read().decode()
        server.wait(timeout=30)
        took = time.monotonic() - started
    finally:
        if server.poll() is None:
            server.kill()
    check("the server is stopping" in events and events.rstrip().endswith("data: [DONE]"),
          "SIGTERM ends the stream with an error event saying the server is stopping")
    check(server.returncode == 0 and took < 10, "SIGTERM stops the server with exit status 0 in %.1f s" % took)
    server.stderr_reader.join(timeout=10)
    text = "".join(lines)
    check("terminated, stopping" in text and "stopped" in text, "the server says it stops and has stopped")
    check(re.search(r'request: 127\.0\.0\.1:\d+ "POST /v1/completions" 200 prompt_tokens=\d+ completion_tokens=\d+ ',
                    text) is not None, "--log-requests logs the stream")


def reasoning_parser(folio_cli, model_dir, client, image):
    """--reasoning-parser deepseek_r1: chat answers carry reasoning_content (the fixture model never writes
    </think>, so the whole answer is reasoning), except with enable_thinking false; an unknown name is an
    error listing the known ones."""
    refused = subprocess.run([folio_cli, "serve", "--model", model_dir, "--port", "0", "--reasoning-parser",
                              "qwen3"], capture_output=True, text=True, timeout=60)
    check(refused.returncode != 0 and "--reasoning-parser expects deepseek_r1, ernie-45-vl or ernie-45-vl-thinking, got 'qwen3'"
          in refused.stderr, "an unknown --reasoning-parser is refused naming the known ones: " + refused.stderr)
    server, lines, match = start(folio_cli, model_dir, "--reasoning-parser", "deepseek_r1",
                                 "--served-model-name", "reasoner")
    try:
        base = "http://127.0.0.1:%s" % match.group(2)
        request = {"model": "reasoner", "max_completion_tokens": 16, "temperature": 0,
                   "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image}},
                                                             {"type": "text", "text": "OCR:"}]}]}
        answers = {}
        for name, extra in (("whole", {}), ("streamed", {"stream": True}),
                            ("plain", {"chat_template_kwargs": {"enable_thinking": False}})):
            with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                json.dump(dict(request, **extra), f)
                f.flush()
                out = subprocess.run([sys.executable, client, base + "/v1/chat/completions", f.name],
                                     capture_output=True, text=True, timeout=120)
            check(out.returncode == 0, "a chat answer with --reasoning-parser (%s): %s" % (name, out.stdout + out.stderr))
            answers[name] = json.loads(out.stdout)
        plain = answers["plain"]
        check(plain["reasoning"] is None and plain["text"], "enable_thinking false: content, no reasoning_content")
        check(answers["whole"]["reasoning"] == plain["text"] and answers["whole"]["text"] is None,
              "deepseek_r1 without </think>: the answer is reasoning_content, content null")
        check(answers["streamed"]["reasoning"] == plain["text"] and answers["streamed"]["text"] == "",
              "streamed: the deltas' reasoning_content adds up to the answer")

        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai-node-reasoning.cjs")
        found = shutil.which("node") and subprocess.run(["node", "-e", "require('openai')"],
                                                        capture_output=True).returncode == 0
        if not found:
            print("skipped: the openai npm package is not installed (npm install openai, NODE_PATH=.../node_modules)")
        else:
            out = subprocess.run(["node", script, base + "/v1", "reasoner", image], capture_output=True, text=True,
                                 timeout=300)
            check(out.returncode == 0, "the openai npm client reads reasoning_content: " + out.stderr[-2000:])
            result = json.loads(out.stdout)
            check(result["whole"] == {"content": None, "reasoning": plain["text"]},
                  "openai npm: message.reasoning_content holds the answer (%s)" % result["whole"])
            check(result["streamed"] == {"content": "", "reasoning": plain["text"]},
                  "openai npm: the streamed deltas' reasoning_content adds up (%s)" % result["streamed"])
            check(result["plain"] == {"content": plain["text"]} and result["plain_streamed"] ==
                  {"content": plain["text"]}, "openai npm: enable_thinking false gives content alone")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    check(server.returncode == 0, "the reasoning server stops")


def llama_reasoning(folio_cli, llama_dir, ocr_model_dir):
    """DeepSeek-R1-Distill's layout: a Llama model whose template opens the answer's thought. The prompt is
    tokenized as the reference does (no second BOS), the greedy answer is the reference's, and deepseek_r1
    puts it in reasoning_content for curl and for the openai npm client; an image is refused. A document
    folio-cli ocr wrote is asked about by its name in --documents-dir."""
    with open(os.path.join(os.path.dirname(llama_dir), "reference.json")) as f:
        reference = json.load(f)["prompts"]["hello"]
    documents = tempfile.mkdtemp(prefix="folio-documents-")
    with open(os.path.join(documents, "scan.png"), "wb") as f:
        f.write(png(64, 48))
    out = subprocess.run([folio_cli, "ocr", os.path.join(documents, "scan.png"), "-o", documents, "--model",
                          ocr_model_dir, "--no-layout", "--format", "json", "--max-new-tokens", "8"],
                         capture_output=True, text=True, timeout=120)
    check(out.returncode == 0 and os.path.exists(os.path.join(documents, "scan.json")),
          "folio-cli ocr writes the document's JSON: " + out.stderr[-1000:])
    server, lines, match = start(folio_cli, llama_dir, "--reasoning-parser", "deepseek_r1",
                                 "--served-model-name", "r1-distill", "--documents-dir", documents)
    try:
        base = "http://127.0.0.1:%s" % match.group(2)
        n = len(reference["greedy_tokens"])
        request = {"model": "r1-distill", "max_completion_tokens": n, "temperature": 0,
                   "messages": [{"role": "user", "content": reference["messages"][0]["content"]}]}
        out = subprocess.run(["curl", "-sS", "-H", "Content-Type: application/json", "-d", json.dumps(request),
                              base + "/v1/chat/completions"], capture_output=True, text=True, timeout=120)
        check(out.returncode == 0, "curl: a chat completion from the Llama model: " + out.stderr)
        answer = json.loads(out.stdout)
        check(answer["usage"]["prompt_tokens"] == reference["n_ids"],
              "the prompt has the reference's %d tokens (%s)" % (reference["n_ids"], answer["usage"]))
        message = answer["choices"][0]["message"]
        check(message["reasoning_content"] == reference["greedy_text"] and message["content"] is None,
              "curl: the greedy answer is the reference's, all of it reasoning_content (%s)" % message)

        image = "data:image/png;base64," + base64.b64encode(png(64, 32)).decode()
        refused = dict(request, messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": image}}, {"type": "text", "text": "What is this?"}]}])
        out = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", "-H", "Content-Type: application/json", "-d",
                              json.dumps(refused), base + "/v1/chat/completions"], capture_output=True, text=True,
                             timeout=120)
        body, status = out.stdout.rsplit("\n", 1)
        check(status == "400" and "text only" in json.loads(body)["error"]["message"],
              "an image for a text model is a 400 saying the model reads text only: " + out.stdout)

        asked = dict(request, document={"name": "scan"})
        out = subprocess.run(["curl", "-sS", "-H", "Content-Type: application/json", "-d", json.dumps(asked),
                              base + "/v1/chat/completions"], capture_output=True, text=True, timeout=120)
        answer = json.loads(out.stdout)
        check(answer.get("document", {}).get("pages") == [0] and
              answer["usage"]["prompt_tokens"] > reference["n_ids"] and
              isinstance(answer["choices"][0]["message"].get("citations"), list),
              "curl: the document folio-cli ocr wrote, named in --documents-dir, goes ahead of the question (%s)"
              % {k: answer.get(k) for k in ("document", "usage", "error")})

        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai-node-reasoning.cjs")
        found = shutil.which("node") and subprocess.run(["node", "-e", "require('openai')"],
                                                        capture_output=True).returncode == 0
        if not found:
            print("skipped: the openai npm package is not installed (npm install openai, NODE_PATH=.../node_modules)")
        else:
            out = subprocess.run(["node", script, base + "/v1", "r1-distill", "-",
                                  reference["messages"][0]["content"], str(n)],
                                 capture_output=True, text=True, timeout=300)
            check(out.returncode == 0, "the openai npm client asks the Llama model: " + out.stderr[-2000:])
            result = json.loads(out.stdout)
            check(result["whole"] == {"content": None, "reasoning": reference["greedy_text"]},
                  "openai npm: message.reasoning_content is the reference's answer (%s)" % result["whole"])
            check(result["streamed"] == {"content": "", "reasoning": reference["greedy_text"]},
                  "openai npm: the streamed reasoning_content adds up to it (%s)" % result["streamed"])
            # A plain-text document longer than the context: the paragraphs that fit, counted by the model's
            # tokenizer, go in, and the body says the page was given in part.
            ask = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai-node-ask.cjs")
            out = subprocess.run(["node", ask, base + "/v1", "r1-distill"], capture_output=True, text=True,
                                 timeout=300)
            check(out.returncode == 0, "the openai npm client asks about a long document: " + out.stderr[-2000:])
            result = json.loads(out.stdout)
            check(result["document"] == {"pages": [0], "pages_in_part": [0], "pages_left_out": []} and
                  result["max_model_len"] // 2 < result["prompt_tokens"] < result["max_model_len"] and
                  result["citations"],
                  "openai npm: a document longer than the context is given in part, within it (%s)" % result)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        shutil.rmtree(documents, ignore_errors=True)
    check(server.returncode == 0, "the Llama server stops")


def ipv6_loopback(folio_cli, model_dir):
    server, lines, match = start(folio_cli, model_dir, "--host", "::1", "--metrics-host", "::1")
    try:
        check(match.group(1) == "[::1]" and match.group(3) == "[::1]", "an IPv6 address is printed in brackets")
        connection = http.client.HTTPConnection("::1", int(match.group(2)), timeout=30)
        connection.request("GET", "/v1/models/" + urllib.request.quote(model_dir.rstrip("/").split("/")[-1]))
        response = connection.getresponse()
        check(response.status == 200 and json.loads(response.read())["object"] == "model",
              "GET /v1/models/{id} over IPv6")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    check(server.returncode == 0, "the IPv6 server stops")


if __name__ == "__main__":
    sys.exit(main())
