#include "app/cli/document-prompt.h"

#include <algorithm>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"
#include "engine/tokenizer/unicode-text.h"

namespace folio::cli {

DocumentPassages load_document(const std::filesystem::path& file) {
    std::string text;
    try {
        text = read_file_text(file);
    } catch (const Error& e) {
        fail("--document: ", e.what());
    }
    std::string extension = file.extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    DocumentPassages document;
    if (extension == ".json") {
        std::string problem;
        const std::optional<nlohmann::json> parsed = try_parse_json(text, problem);
        if (!parsed) {
            fail("--document ", file.string(), ": not JSON (", problem, ")");
        }
        document = DocumentPassages::from_ocr_json(*parsed, file.string());
    } else {
        if (!is_valid_utf8(text)) {
            fail("--document ", file.string(), ": not UTF-8 text (and not a .json file folio-cli ocr wrote)");
        }
        document = DocumentPassages::from_text(text);
    }
    if (document.empty()) {
        fail("--document ", file.string(), ": no text to answer from");
    }
    return document;
}

PassageSelection add_document(Chat& chat, const DocumentPassages& document, const std::filesystem::path& file,
                              const EngineService& service, std::optional<int64_t> max_tokens) {
    const auto first_user =
        std::find_if(chat.messages.begin(), chat.messages.end(),
                     [](const ChatMessage& m) { return m.role == ChatMessage::Role::User; });
    if (first_user == chat.messages.end()) {
        fail("--document ", file.string(), ": the request has no user message to ask it in");
    }
    const int64_t context = service.limits().max_model_len;
    ChatBudget budget;
    for (const ChatMessage& m : chat.messages) {
        budget.messages.push_back(m.text);
    }
    for (const int64_t n : service.count_media({}, media_sizes(chat.messages))) {
        budget.media_tokens += n;
    }
    budget.context_len = context;
    const int64_t answer = max_tokens.value_or(context / 4);
    budget.answer_room = answer;
    PassageSelection selection = document.select_for_chat(
        budget,
        [&service](const std::vector<std::string>& texts) { return service.count_tokens({}, texts); });
    if (selection.text.empty()) {
        fail("--document ", file.string(), ": not even one block fits in the model's context of ", context,
             " tokens beside the prompt, its images and videos and ", answer,
             " tokens for the answer (--max-model-len, --max-tokens)");
    }
    first_user->text = selection.text + "\n\n" + first_user->text;
    return selection;
}

std::string describe_answer(const std::string& answer, const DocumentPassages& document,
                            const PassageSelection& selection) {
    std::string out = "given page";
    out += selection.pages.size() == 1 ? " " : "s ";
    out += page_list(selection.pages);
    if (!selection.in_part.empty()) {
        out += " (" + page_list(selection.in_part) + " in part)";
    }
    if (!selection.left_out.empty()) {
        out += ", left out " + page_list(selection.left_out);
    }
    std::vector<std::string> cited;
    for (const Citation& c : find_citations(answer, document)) {
        for (size_t i = 0; i < c.refs.size(); ++i) {
            const Passage* p = c.known[i] ? document.find(c.refs[i]) : nullptr;
            std::string item = p ? p->ref + " (page " + std::to_string(p->page + 1) + ", block " +
                                       std::to_string(p->block_id) + ")"
                                 : c.refs[i] + " (no such block)";
            if (std::find(cited.begin(), cited.end(), item) == cited.end()) {
                cited.push_back(std::move(item));
            }
        }
    }
    out += cited.empty() ? "; cites no block" : "; cites ";
    for (size_t i = 0; i < cited.size(); ++i) {
        out += (i == 0 ? "" : ", ") + cited[i];
    }
    return out;
}

}  // namespace folio::cli
