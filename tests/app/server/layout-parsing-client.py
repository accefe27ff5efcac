#!/usr/bin/env python3
"""PaddleOCR's document-parsing API (POST /layout-parsing) of folio-cli serve, driven by a client written with
Python's standard library from PaddleX's serving documentation (the request's file as base64 with fileType,
the envelope logId/errorCode/errorMsg/result, result.layoutParsingResults[] with prunedResult, markdown.text,
markdown.images and outputImages) and from the request Haystack's PaddleOCRVLDocumentConverter and LangChain's
PaddleOCRVLLoader send (camelCase options, "Authorization: token KEY").

Usage: layout-parsing-client.py FOLIO_CLI MODEL_DIR LAYOUT_DIR SAMPLE_PDF IMAGE NODE_DOCUMENT_CLIENT

folio-cli ocr writes the same files first; each page's Markdown and prunedResult must equal what it wrote
(timings aside). Then the options, every error case, a URL, documents beside chat requests, a load of them
with no request lost and every KV block free at the end, and a client that goes away. The same PDF through
the OpenAI chat route to the pipeline's served name, from this client and from the openai npm package.
"""
import base64
import http.client
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

KEY = "layout-key"
failures = []


def check(condition, what):
    if condition:
        print("ok: " + what)
    else:
        print("FAILED: " + what)
        failures.append(what)


def post(port, path, body, headers=None, timeout=600):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    all_headers = {"Content-Type": "application/json", "Authorization": "token " + KEY}
    all_headers.update(headers or {})
    connection.request("POST", path, body=data, headers=all_headers)
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, text


def get(port, path, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    return response.status, text


def encoded(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode("ascii")


def parse_document(port, path, file_type, **options):
    """PaddleX's documented client: the file as base64, the results saved as markdown_i/ folders."""
    payload = {"file": encoded(path), "fileType": file_type}
    payload.update(options)
    status, body = post(port, "/layout-parsing", payload)
    return status, body


def save_results(result, folder):
    for i, res in enumerate(result["layoutParsingResults"]):
        md_dir = os.path.join(folder, "markdown_%d" % i)
        os.makedirs(md_dir, exist_ok=True)
        with open(os.path.join(md_dir, "doc.md"), "w") as f:
            f.write(res["markdown"]["text"])
        for img_path, img in res["markdown"]["images"].items():
            target = os.path.join(md_dir, img_path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(base64.b64decode(img))
        for img_name, img in (res.get("outputImages") or {}).items():
            with open(os.path.join(folder, "%s_%d.jpg" % (img_name, i)), "wb") as f:
                f.write(base64.b64decode(img))


def without_timings(page):
    page = json.loads(json.dumps(page))
    page.pop("input_path", None)
    page.get("layout_det_res", {}).pop("input_path", None)
    page.get("folio", {}).pop("timings", None)
    return page


def three_page_pdf():
    """A PDF of three blank pages, its cross-reference table with the real offsets."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >>"]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 400] >>"] * 3
    out = b"%PDF-1.4\n"
    offsets = []
    for i, obj in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


def metric(text, name):
    match = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(match.group(1)) if match else None


def main():
    folio_cli, model_dir, layout_dir, sample_pdf, image, node_client = sys.argv[1:7]
    work = tempfile.mkdtemp()
    try:
        run(folio_cli, model_dir, layout_dir, sample_pdf, image, node_client, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        raise SystemExit("FAILED: %d checks" % len(failures))


def run(folio_cli, model_dir, layout_dir, sample_pdf, image, node_client, work):
    engine = ["--max-model-len", "4096"]
    # The request's file is "document" to the server; the same name for folio-cli ocr, so that the figures'
    # links agree.
    pdf = os.path.join(work, "document.pdf")
    png = os.path.join(work, "image", "document.png")
    os.makedirs(os.path.dirname(png))
    shutil.copy(sample_pdf, pdf)
    shutil.copy(image, png)
    for name, source in (("pdf", pdf), ("png", png)):
        ocr = subprocess.run([folio_cli, "ocr", source, "-o", os.path.join(work, "ocr-" + name), "--model", model_dir,
                              "--layout-model", layout_dir, "--max-new-tokens", "8", "--format", "md,json"] + engine,
                             capture_output=True, text=True)
        check(ocr.returncode == 0, "folio-cli ocr %s: exit 0 (%s)" % (name, ocr.stderr.strip()[-300:]))

    server = subprocess.Popen([folio_cli, "serve", "--model", model_dir, "--layout-model", layout_dir, "--port", "0",
                               "--metrics-port", "0", "--api-key", KEY, "--max-pages", "2", "--max-body-size", "8M",
                               "--allow-image-urls", "--max-num-seqs", "16", "--max-new-tokens", "8"] + engine,
                              stderr=subprocess.PIPE, text=True)
    try:
        port = metrics_port = None
        for line in server.stderr:
            sys.stderr.write(line)
            match = re.search(r"on http://127\.0\.0\.1:(\d+)/v1, metrics on http://127\.0\.0\.1:(\d+)/metrics, "
                              r"documents on http://127\.0\.0\.1:\d+/layout-parsing", line)
            if match:
                port, metrics_port = int(match.group(1)), int(match.group(2))
                break
        check(port is not None, "the server says where documents go")
        if port is None:
            return
        threading.Thread(target=lambda: [sys.stderr.write(l) for l in server.stderr], daemon=True).start()
        exercise(port, metrics_port, work, pdf, png)
        chat_route(port, work, pdf, node_client)
    finally:
        server.send_signal(2)
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            code = None
        check(code == 0, "the server stops on Ctrl-C with exit 0")


def exercise(port, metrics_port, work, pdf, png):
    # A PDF as PaddleX's client sends it: each page as folio-cli ocr wrote it.
    status, body = parse_document(port, pdf, 0, maxNewTokens=8, logId="pdf-1")
    check(status == 200 and body["errorCode"] == 0 and body["errorMsg"] == "Success", "PDF: 200, errorCode 0")
    check(body["logId"] == "pdf-1", "PDF: the logId given comes back")
    result = body["result"]
    pages = result["layoutParsingResults"]
    check(len(pages) == 2, "PDF: two pages")
    info = result["dataInfo"]
    check(info["type"] == "pdf" and info["numPages"] == 2 and len(info["pages"]) == 2 and info["pages"][0]["width"] > 0,
          "PDF: dataInfo")
    with open(os.path.join(work, "ocr-pdf", "document.md")) as f:
        ocr_md = f.read()
    check("".join("\n\n" + p["markdown"]["text"] for p in pages) == ocr_md,
          "PDF: the pages' Markdown is folio-cli ocr's document.md")
    with open(os.path.join(work, "ocr-pdf", "document.json")) as f:
        ocr_json = json.load(f)
    check([without_timings(p["prunedResult"]) for p in pages] == [without_timings(p) for p in ocr_json],
          "PDF: prunedResult is folio-cli ocr's page JSON")
    check(all("input_path" not in json.dumps(p["prunedResult"]) for p in pages), "PDF: no input_path left")
    for p in pages:
        for link, data in p["markdown"]["images"].items():
            with open(os.path.join(work, "ocr-pdf", link), "rb") as f:
                check(base64.b64decode(data) == f.read(), "PDF: figure %s as ocr saved it" % link)
            check(link in p["markdown"]["text"], "PDF: figure %s linked from the page" % link)
    save_results(result, os.path.join(work, "client-pdf"))
    check(os.path.exists(os.path.join(work, "client-pdf", "markdown_1", "doc.md")), "PDF: the client saves each page")

    # An image, with the key as a bearer this time.
    payload = {"file": encoded(png), "fileType": 1, "maxNewTokens": 8}
    status, body = post(port, "/layout-parsing", payload, {"Authorization": "Bearer " + KEY})
    check(status == 200 and len(body["result"]["layoutParsingResults"]) == 1, "image: 200, one page")
    page = body["result"]["layoutParsingResults"][0]
    with open(os.path.join(work, "ocr-png", "document.md")) as f:
        check(page["markdown"]["text"] == f.read(), "image: the Markdown is folio-cli ocr's")
    with open(os.path.join(work, "ocr-png", "document.json")) as f:
        check(without_timings(page["prunedResult"]) == without_timings(json.load(f)[0]),
              "image: prunedResult is folio-cli ocr's")
    check(body["result"]["dataInfo"]["type"] == "image" and body["result"]["dataInfo"]["width"] > 0, "image: dataInfo")
    check(len(body["logId"]) == 32, "image: a logId is made")

    # The request Haystack's converter sends: camelCase options, nulls for what it leaves alone.
    haystack = {"file": encoded(png), "fileType": 1, "useDocOrientationClassify": False, "useDocUnwarping": False,
                "useLayoutDetection": None, "useChartRecognition": False, "layoutThreshold": None, "layoutNms": True,
                "layoutUnclipRatio": None, "layoutMergeBboxesMode": None, "promptLabel": None,
                "formatBlockContent": None, "repetitionPenalty": None, "temperature": None, "topP": None,
                "minPixels": None, "maxPixels": None, "maxNewTokens": 8, "mergeLayoutBlocks": None,
                "markdownIgnoreLabels": None, "vlmExtraArgs": None, "prettifyMarkdown": True,
                "showFormulaNumber": False, "visualize": False}
    status, body = post(port, "/layout-parsing", haystack)
    check(status == 200 and "outputImages" not in body["result"]["layoutParsingResults"][0],
          "Haystack's request: 200, no images unless asked")

    # Options.
    status, body = parse_document(port, png, 1, useLayoutDetection=False, promptLabel="table", maxNewTokens=4)
    blocks = body["result"]["layoutParsingResults"][0]["prunedResult"]["parsing_res_list"] if status == 200 else []
    check(len(blocks) == 1 and blocks[0]["block_label"] == "table", "useLayoutDetection false: one table block")
    status, body = parse_document(port, png, 1, layoutThreshold=1.0, maxNewTokens=4)
    check(status == 200 and body["result"]["layoutParsingResults"][0]["prunedResult"]["parsing_res_list"] == [],
          "layoutThreshold 1: no block passes")
    status, body = parse_document(port, png, 1, markdownIgnoreLabels=[], maxNewTokens=4)
    settings = body["result"]["layoutParsingResults"][0]["prunedResult"]["model_settings"] if status == 200 else {}
    check(settings.get("markdown_ignore_labels") == [], "markdownIgnoreLabels []: every label in the Markdown")
    status, body = parse_document(port, png, 1, visualize=True, maxNewTokens=4)
    page = body["result"]["layoutParsingResults"][0] if status == 200 else {}
    check(base64.b64decode(page.get("outputImages", {}).get("layout_det_res", ""))[:2] == b"\xff\xd8" and
          base64.b64decode(page.get("inputImage", ""))[:2] == b"\xff\xd8", "visualize: the layout and the page as JPEG")
    status, body = parse_document(port, pdf, 0, outputFormats=["docx"], restructurePages=True, maxNewTokens=4)
    export = body["result"]["layoutParsingResults"][0].get("exports", {}).get("docx") if status == 200 else None
    check(export is not None and export["fileName"] == "document.docx", "outputFormats docx: exports.docx")
    if export:
        path = os.path.join(work, "document.docx")
        with open(path, "wb") as f:
            f.write(base64.b64decode(export["content"]))
        with zipfile.ZipFile(path) as z:
            xml = z.read("word/document.xml").decode()
        check(xml.count('w:type="page"') == 1, "outputFormats docx: a Word document of two pages")

    # A URL, fetched under --allow-image-urls, its type told from its bytes.
    folder = os.path.dirname(pdf)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=folder, **kwargs)

        def log_message(self, *args):
            pass

    files = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=files.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/document.pdf" % files.server_address[1]
    status, body = post(port, "/layout-parsing", {"file": url, "maxNewTokens": 8})
    check(status == 200 and [p["markdown"]["text"] for p in body["result"]["layoutParsingResults"]] ==
          [p["markdown"]["text"] for p in pages], "URL: fetched and parsed as the base64 PDF")
    status, body = post(port, "/layout-parsing", {"file": url + ".missing"})
    check(status == 400 and "404" in body["errorMsg"], "URL: a missing file is named with its status")
    files.shutdown()

    # Every error in the envelope, errorCode the HTTP status.
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write("plain words, not a document\n")
    cases = [
        ({"fileType": 0}, 422, "file: is required"),
        ({"file": "!!!!"}, 422, "not valid base64"),
        ({"file": encoded(pdf), "fileType": 1}, 422, "1 says an image, but the file is a PDF"),
        ({"file": encoded(os.path.join(work, "notes.txt"))}, 422, "not a PDF"),
        ({"file": base64.b64encode(b"%PDF-1.7\n1 0 obj broken").decode()}, 422, "file"),
        ({"file": base64.b64encode(three_page_pdf()).decode(), "fileType": 0}, 422, "3 pages; this server takes at most 2"),
        ({"file": encoded(png), "topP": 2}, 422, "topP"),
        ({"file": encoded(png), "outputFormats": ["pdf"]}, 422, "['docx']"),
        ({"file": encoded(png), "useDocOrientationClassify": True}, 422, "orientation"),
    ]
    for payload, expected, says in cases:
        status, body = post(port, "/layout-parsing", payload)
        check(status == expected and isinstance(body, dict) and body.get("errorCode") == expected and
              says in body.get("errorMsg", "") and body.get("logId"),
              "error %d: %s (%s)" % (expected, says, body.get("errorMsg") if isinstance(body, dict) else body))
    status, body = post(port, "/layout-parsing", {"file": encoded(png)}, {"Authorization": "token wrong"})
    check(status == 401 and body["errorCode"] == 401, "a wrong key: 401 in the envelope")
    status, body = post(port, "/layout-parsing", b"{" + b"x" * (9 << 20) + b"}")
    check(status == 413 and body["errorCode"] == 413, "a body over --max-body-size: 413 in the envelope")

    # Documents and chat requests at once; none lost, every KV block free afterwards.
    image_url = "data:image/png;base64," + encoded(png)
    outcomes = []
    lock = threading.Lock()

    def document(i):
        status, body = parse_document(port, pdf if i % 2 else png, 0 if i % 2 else 1, maxNewTokens=8)
        with lock:
            outcomes.append(("document", status, body["result"]["layoutParsingResults"] if status == 200 else body))

    def chat(i):
        status, body = post(port, "/v1/chat/completions",
                            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image_url}},
                                                                       {"type": "text", "text": "OCR:"}]}],
                             "max_tokens": 8}, {"Authorization": "Bearer " + KEY})
        with lock:
            outcomes.append(("chat", status, body))

    threads = [threading.Thread(target=document, args=(i,)) for i in range(6)]
    threads += [threading.Thread(target=chat, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(len(outcomes) == 12 and all(o[1] == 200 for o in outcomes),
          "6 documents and 6 chats at once: every one answered 200 (%s)" % [o[1] for o in outcomes])
    by_pages = sorted(len(o[2]) for o in outcomes if o[0] == "document")
    check(by_pages == [1, 1, 1, 2, 2, 2], "every document came back whole (%s)" % by_pages)

    # A client that sends a document and goes away: its run is cancelled.
    before = get(metrics_port, "/metrics")[1]
    raw = json.dumps({"file": encoded(pdf), "maxNewTokens": 4096, "layoutThreshold": 0.0}).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /layout-parsing HTTP/1.1\r\nHost: x\r\nAuthorization: token " + KEY.encode() +
                 b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(raw) + raw)
    time.sleep(0.2)
    sock.close()
    cancelled = metric(before, "folio:request_cancelled_total") or 0
    for _ in range(200):
        text = get(metrics_port, "/metrics")[1]
        if (metric(text, "folio:request_cancelled_total") or 0) > cancelled:
            break
        time.sleep(0.1)
    check((metric(text, "folio:request_cancelled_total") or 0) > cancelled, "a client that goes away is cancelled")

    for _ in range(300):
        text = get(metrics_port, "/metrics")[1]
        if metric(text, "fastdeploy:num_requests_running") == 0 and metric(text, "fastdeploy:gpu_cache_usage_perc") == 0:
            break
        time.sleep(0.1)
    check(metric(text, "fastdeploy:gpu_cache_usage_perc") == 0 and
          metric(text, "fastdeploy:available_gpu_block_num") == metric(text, "folio:kv_blocks"),
          "every KV block free at the end")


def chat_route(port, work, pdf, node_client):
    """The pipeline behind OpenAI's chat API: a PDF as a file part, answered with the document's Markdown."""
    with open(os.path.join(work, "ocr-pdf", "document.md")) as f:
        markdown = f.read()[2:]  # without the blank line ocr puts before the first page
    pipeline = "paddleocr-vl-tiny-pipeline"
    status, body = get(port, "/v1/models", {"Authorization": "Bearer " + KEY})
    check(status == 200 and pipeline in [m["id"] for m in json.loads(body)["data"]],
          "GET /v1/models lists the pipeline")
    message = {"role": "user", "content": [
        {"type": "text", "text": "Convert this document."},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64," + encoded(pdf), "filename": "a.pdf"}}]}
    bearer = {"Authorization": "Bearer " + KEY}
    status, body = post(port, "/v1/chat/completions", {"model": pipeline, "messages": [message]}, bearer)
    check(status == 200 and body["choices"][0]["message"]["content"] == markdown and
          body["choices"][0]["finish_reason"] == "stop", "chat to the pipeline: the document's Markdown")
    status, body = post(port, "/v1/chat/completions", {"model": pipeline, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "no file"}]}]}, bearer)
    check(status == 400 and "exactly one document" in body["error"]["message"], "chat to the pipeline: no file, 400")
    if shutil.which("node") is None:
        print("skipped: the openai npm package's request (node is not installed)")
        return
    node = subprocess.run(["node", node_client, "http://127.0.0.1:%d/v1" % port, pipeline, KEY, pdf],
                          capture_output=True, text=True, timeout=600)
    if "Cannot find module 'openai'" in node.stderr:
        print("skipped: the openai npm package's request (the package is not installed)")
        return
    try:
        result = json.loads(node.stdout)
    except ValueError:
        result = {"error": node.stdout + node.stderr}
    check("error" not in result, "openai npm: no error (%s)" % result.get("error"))
    if "error" in result:
        return
    check(result["whole"]["text"] == markdown and result["whole"]["finish"] == "stop",
          "openai npm: the whole answer is the document's Markdown")
    check(result["streamed"]["text"] == markdown and result["streamed"]["chunks"] == 2 and
          result["streamed"]["finish"] == "stop", "openai npm: streamed a page a chunk")
    check(pipeline in result["models"], "openai npm: the pipeline is among the models")


if __name__ == "__main__":
    main()
