#!/usr/bin/env python3
"""One of FastDeploy's documented command lines for ERNIE-4.5-VL-28B-A3B run by folio-cli serve as written.

Usage: serve-fastdeploy-line.py FOLIO_CLI MODEL_DIR CONTEXT -- OPTION...
The options are those of the documented line after `python -m fastdeploy.entrypoints.openai.api_server`. Two
things change, and nothing else: --model names a copy of the fixture folder MODEL_DIR whose config.json has the
full checkpoint's context (CONTEXT positions, so that the line's --max-model-len fits), and each port
(--port, --metrics-port, --engine-worker-queue-port, --cache-queue-port) is a free one, so that tests may run
side by side. The server must start and say where it listens, answer GET /health, and answer a chat
completion with an image, asked with curl as FastDeploy's page asks it (its reasoning split off where the line
has --reasoning-parser); then Ctrl-C (SIGINT) stops it with exit status 0.
"""
import base64
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import zlib

PORT_OPTIONS = ("--port", "--metrics-port", "--engine-worker-queue-port", "--cache-queue-port")


def png(width, height):
    rows = b"".join(b"\x00" + bytes(((x * 5 + y * 11) % 256) for x in range(width) for _ in range(3))
                    for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check(condition, what):
    if not condition:
        raise SystemExit("FAILED: " + what)
    print("ok: " + what)


def curl(*args):
    out = subprocess.run(["curl", "-sS", "--max-time", "120", "-w", "\n%{http_code}", *args], capture_output=True,
                         text=True, timeout=180)
    body, _, status = out.stdout.rpartition("\n")
    return int(status or 0), body


def main():
    folio_cli, model_dir, context = sys.argv[1:4]
    split = sys.argv.index("--")
    options = sys.argv[split + 1:]
    if shutil.which("curl") is None:
        print("skipped: curl is not installed")
        return 0

    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, os.path.basename(model_dir.rstrip("/")))
        shutil.copytree(model_dir, model)
        with open(os.path.join(model, "config.json")) as f:
            config = json.load(f)
        config.setdefault("text_config", config)["max_position_embeddings"] = int(context)
        with open(os.path.join(model, "config.json"), "w") as f:
            json.dump(config, f, indent=2)

        args, i, port = [], 0, None
        while i < len(options):
            name = options[i]
            if name == "--model":
                args += [name, model]
                i += 2
            elif name in PORT_OPTIONS:
                value = free_port()
                port = value if name == "--port" else port
                args += [name, str(value)]
                i += 2
            else:
                args.append(name)
                i += 1
        check(port is not None, "the line gives --port")
        print("folio-cli serve " + " ".join(args))
        server = subprocess.Popen([folio_cli, "serve", *args], stderr=subprocess.PIPE, text=True)
        try:
            listening = None
            for line in server.stderr:
                sys.stderr.write(line)
                match = re.search(r"serving (\S+) on http://127\.0\.0\.1:(\d+)/v1", line)
                if match:
                    listening = int(match.group(2))
                    break
            check(listening == port, "the server starts on the line's --port")
            base = "http://127.0.0.1:%d" % port
            status, _ = curl("-i", base + "/health")
            check(status == 200, "GET /health")

            image = "data:image/png;base64," + base64.b64encode(png(56, 56)).decode()
            request = {"messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": image}},
                {"type": "text", "text": "From which era does the artifact in the image originate?"}]}],
                "max_tokens": 8}
            status, body = curl("-X", "POST", base + "/v1/chat/completions", "-H", "Content-Type: application/json",
                                "-d", json.dumps(request))
            check(status == 200, "a chat completion with an image is answered: %s" % body[:300])
            answer = json.loads(body)
            message = answer["choices"][0]["message"]
            check(answer["usage"]["completion_tokens"] >= 1 and answer["usage"]["prompt_tokens"] > 16,
                  "the answer has tokens and the prompt its image's")
            if "--reasoning-parser" in args:
                check("reasoning_content" in message, "the reasoning parser gives reasoning_content")
        finally:
            server.send_signal(signal.SIGINT)
            try:
                rest = server.communicate(timeout=60)[1]
            except subprocess.TimeoutExpired:
                server.kill()
                raise SystemExit("FAILED: the server did not stop on SIGINT")
            sys.stderr.write(rest)
        check(server.returncode == 0, "Ctrl-C stops the server with exit status 0 (got %s)" % server.returncode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
