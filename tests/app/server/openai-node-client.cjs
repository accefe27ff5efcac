// The official OpenAI client for Node (the openai npm package) against folio-cli serve.
// Usage: node openai-node-client.cjs BASE_URL MODEL API_KEY IMAGE_DATA_URL
// Prints one JSON object: the whole and streamed answers, the model retrieved by id, the error of a prompt
// that leaves no room, and how an aborted request ended for the client.
const OpenAI = require("openai");

async function main() {
    const [baseURL, model, apiKey, image] = process.argv.slice(2);
    const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });
    const messages = [{
        role: "user",
        content: [{ type: "image_url", image_url: { url: image } }, { type: "text", text: "OCR:" }],
    }];
    const result = {};
    const whole = await client.chat.completions.create({ model, messages, max_completion_tokens: 8192,
                                                         temperature: 0 });
    result.whole = { text: whole.choices[0].message.content, finish: whole.choices[0].finish_reason,
                     completion_tokens: whole.usage.completion_tokens };
    const stream = await client.chat.completions.create({ model, messages, max_completion_tokens: 8192,
                                                          temperature: 0, stream: true,
                                                          stream_options: { include_usage: true } });
    result.streamed = { text: "", finish: null, completion_tokens: null };
    for await (const chunk of stream) {
        for (const choice of chunk.choices) {
            result.streamed.text += choice.delta.content || "";
            if (choice.finish_reason) {
                result.streamed.finish = choice.finish_reason;
            }
        }
        if (chunk.usage) {
            result.streamed.completion_tokens = chunk.usage.completion_tokens;
        }
    }
    result.retrieved = (await client.models.retrieve(model)).id;
    // Ask the document: Folio's "document" field, sent as it is by the client; asked twice, the second
    // finds the document in the prefix cache.
    const asked = { model, max_completion_tokens: 4, temperature: 0,
                    messages: [{ role: "user", content: "What grew?" }],
                    document: "Sales grew by 12% in the north of the country this year.\n\n" +
                              "Costs fell by 3% over the same months, mostly in transport." };
    const first = await client.chat.completions.create(asked);
    const second = await client.chat.completions.create(asked);
    // Streamed, the last chunk carries the citations in its delta and the pages beside its choices.
    let last = null;
    for await (const chunk of await client.chat.completions.create({ ...asked, stream: true })) {
        last = chunk;
    }
    result.document = { pages: first.document.pages, citations: Array.isArray(first.choices[0].message.citations),
                        cached: second.usage.prompt_tokens_details.cached_tokens,
                        prompt_tokens: second.usage.prompt_tokens,
                        streamed_pages: last.document.pages,
                        streamed_citations: Array.isArray(last.choices[0].delta.citations) };
    try {
        await client.completions.create({ model, prompt: "word ".repeat(20000), max_tokens: 4 });
        result.over_context = null;
    } catch (e) {
        result.over_context = { status: e.status, code: e.code };
    }
    // A long request given up by the client: the server cancels it.
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    try {
        await client.completions.create({ model, prompt: "Hello", max_tokens: 4000, ignore_eos: true },
                                        { signal: controller.signal });
        result.aborted = "finished";
    } catch (e) {
        result.aborted = e.name;
    }
    console.log(JSON.stringify(result));
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
