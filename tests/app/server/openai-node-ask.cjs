// The openai npm package asking about a plain-text document longer than the model's context, sent as Folio's
// "document" field beside the messages (the client passes fields it does not know through).
// Usage: node openai-node-ask.cjs BASE_URL MODEL
// Prints one JSON object: the body's document pages, the prompt's tokens, the served context and whether the
// message lists its citations.
const OpenAI = require("openai");

async function main() {
    const [baseURL, model] = process.argv.slice(2);
    const client = new OpenAI({ baseURL, apiKey: "none", maxRetries: 0, timeout: 300000 });
    const paragraphs = [];
    for (let i = 0; i < 2000; ++i) {
        paragraphs.push(`Paragraph ${i} is filler that says nothing about the question at all.`);
    }
    paragraphs.splice(1234, 0, "The warranty of the pump lasts two years.");
    const answer = await client.chat.completions.create({
        model,
        messages: [{ role: "user", content: "How long is the pump's warranty?" }],
        max_completion_tokens: 4,
        temperature: 0,
        document: paragraphs.join("\n\n"),
    });
    let maxModelLen = null;
    for await (const m of client.models.list()) {
        if (m.id === model) {
            maxModelLen = m.max_model_len;
        }
    }
    console.log(JSON.stringify({
        document: answer.document,
        prompt_tokens: answer.usage.prompt_tokens,
        max_model_len: maxModelLen,
        citations: Array.isArray(answer.choices[0].message.citations),
    }));
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
