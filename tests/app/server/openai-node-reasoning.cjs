// The openai npm package reading reasoning_content from folio-cli serve --reasoning-parser.
// Usage: node openai-node-reasoning.cjs BASE_URL MODEL IMAGE_DATA_URL|- [TEXT] [MAX_TOKENS]
// Prints one JSON object: the content and reasoning_content of a chat answer, whole and streamed, and of one
// asked with chat_template_kwargs {"enable_thinking": false}. With "-" for the image the question is TEXT
// alone, as a string.
const OpenAI = require("openai");

async function answer(client, model, messages, stream, extra, maxTokens) {
    const request = { model, messages, max_completion_tokens: maxTokens, temperature: 0, ...extra };
    if (!stream) {
        const message = (await client.chat.completions.create(request)).choices[0].message;
        return { content: message.content, reasoning: message.reasoning_content };
    }
    const result = { content: "", reasoning: undefined };
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
        for (const choice of chunk.choices) {
            result.content += choice.delta.content || "";
            if (choice.delta.reasoning_content !== undefined) {
                result.reasoning = (result.reasoning || "") + choice.delta.reasoning_content;
            }
        }
    }
    return result;
}

async function main() {
    const [baseURL, model, image, text, maxTokens] = process.argv.slice(2);
    const client = new OpenAI({ baseURL, apiKey: "none", maxRetries: 0, timeout: 120000 });
    const content = image === "-" ? text
        : [{ type: "image_url", image_url: { url: image } }, { type: "text", text: text || "OCR:" }];
    const messages = [{ role: "user", content }];
    const n = Number(maxTokens || 16);
    const off = { chat_template_kwargs: { enable_thinking: false } };
    const result = {
        whole: await answer(client, model, messages, false, {}, n),
        streamed: await answer(client, model, messages, true, {}, n),
        plain: await answer(client, model, messages, false, off, n),
        plain_streamed: await answer(client, model, messages, true, off, n),
    };
    console.log(JSON.stringify(result));
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
