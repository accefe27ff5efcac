#!/usr/bin/env python3
"""A client of the OpenAI API on Python's standard library alone.

Usage: openai-client.py URL BODY.json [API_KEY]
Posts the body to URL; prints {"text": ..., "completion_tokens": ..., "finish_reason": ..., "reasoning": ...} as
JSON ("reasoning": the reasoning_content, None where the answer has none). A body with "stream": true is read as
server-sent events, line by line as they come.
"""
import json
import sys
import urllib.error
import urllib.request


def main():
    url, body_file = sys.argv[1], sys.argv[2]
    with open(body_file, "rb") as f:
        body = f.read()
    headers = {"Content-Type": "application/json"}
    if len(sys.argv) > 3:
        headers["Authorization"] = "Bearer " + sys.argv[3]
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    stream = json.loads(body).get("stream", False)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            if not stream:
                answer = json.load(response)
                choice = answer["choices"][0]
                text = choice["message"]["content"] if "message" in choice else choice["text"]
                result = {"text": text, "completion_tokens": answer["usage"]["completion_tokens"],
                          "finish_reason": choice["finish_reason"],
                          "reasoning": choice.get("message", {}).get("reasoning_content")}
            else:
                result = {"text": "", "completion_tokens": None, "finish_reason": None, "done": False,
                          "reasoning": None}
                for raw in response:
                    line = raw.decode("utf-8").rstrip("\n")
                    if not line.startswith("data: "):
                        continue
                    data = line[len("data: "):]
                    if data == "[DONE]":
                        result["done"] = True
                        break
                    chunk = json.loads(data)
                    for choice in chunk.get("choices", []):
                        delta = choice.get("delta", {})
                        result["text"] += delta.get("content") or choice.get("text") or ""
                        if "reasoning_content" in delta:
                            result["reasoning"] = (result["reasoning"] or "") + delta["reasoning_content"]
                        if choice.get("finish_reason"):
                            result["finish_reason"] = choice["finish_reason"]
                    if chunk.get("usage"):
                        result["completion_tokens"] = chunk["usage"]["completion_tokens"]
                if not result["done"]:
                    raise SystemExit("the stream ended without [DONE]")
    except urllib.error.HTTPError as e:
        print(json.dumps({"status": e.code, "error": json.load(e)}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
