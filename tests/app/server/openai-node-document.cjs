// The official OpenAI client for Node (the openai npm package) sending a PDF to the document pipeline's
// served name as a "file" content part, whole and streamed.
// Usage: node openai-node-document.cjs BASE_URL PIPELINE_MODEL API_KEY PDF_PATH
// Prints one JSON object: both answers' text and finish reasons, the chunks the stream came in, and the
// models listed.
const fs = require("fs");
const OpenAI = require("openai");

async function main() {
    const [baseURL, model, apiKey, pdf] = process.argv.slice(2);
    const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 300000 });
    const data = "data:application/pdf;base64," + fs.readFileSync(pdf).toString("base64");
    const messages = [{
        role: "user",
        content: [{ type: "text", text: "Convert this document to Markdown." },
                  { type: "file", file: { file_data: data, filename: "document.pdf" } }],
    }];
    const result = {};
    const whole = await client.chat.completions.create({ model, messages });
    result.whole = { text: whole.choices[0].message.content, finish: whole.choices[0].finish_reason };
    const stream = await client.chat.completions.create({ model, messages, stream: true });
    result.streamed = { text: "", finish: null, chunks: 0 };
    for await (const chunk of stream) {
        for (const choice of chunk.choices) {
            if (choice.delta.content) {
                result.streamed.text += choice.delta.content;
                result.streamed.chunks += 1;
            }
            if (choice.finish_reason) {
                result.streamed.finish = choice.finish_reason;
            }
        }
    }
    result.models = [];
    for await (const m of client.models.list()) {
        result.models.push(m.id);
    }
    console.log(JSON.stringify(result));
}

main().catch((e) => {
    console.log(JSON.stringify({ error: String(e), status: e.status || null }));
    process.exit(1);
});
