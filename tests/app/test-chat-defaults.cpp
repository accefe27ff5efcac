// The desktop chat takes the model folder's generation_config.json: with the ERNIE-4.5-VL fixture and a file
// asking for temperature 2 its answer is sampled (not the greedy one), and with the file ignored
// (--generation-config vllm) it is the greedy answer, Folio's own default.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "app/chat/chat-session.h"
#include "engine/backend/backend.h"
#include "engine/service/engine-service.h"

using namespace folio;
using namespace std::chrono_literals;

namespace {

const std::filesystem::path kErnieDir =
    std::filesystem::path(FOLIO_FIXTURES_ROOT) / "ernie45-vl/ernie45-vl-tiny";
constexpr int kMaxTokens = 12;

ServiceParams ernie(const GenerationConfigSource& source) {
    ServiceParams params;
    params.device.make_backend = [] { return make_cpu_backend(2); };
    ModelSlot slot{ModelRole::Chat, kErnieDir, {}};
    slot.generation_config = source;
    params.models.push_back(std::move(slot));
    params.engine.max_model_len = 1024;
    params.engine.max_num_seqs = 4;
    return params;
}

// The greedy answer to "What is in the picture?", from the service itself.
std::string greedy_answer(EngineService& service) {
    GenerationOptions options;
    options.max_tokens = kMaxTokens;
    Chat chat;
    chat.messages.emplace_back(ChatMessage::Role::User, "What is in the picture?");
    RequestHandle handle = service.submit(RequestSpec(chat, options), {});
    std::string text;
    while (std::optional<RequestOutput> out = handle.next()) {
        text += out->text;
    }
    return text;
}

// The chat's answer to "What is in the picture?", its reasoning and text together.
QString chat_answer(EngineService& service) {
    ChatSession session(service);
    session.setMaxNewTokens(kMaxTokens);
    QSignalSpy finished(&session, &ChatSession::answerFinished);
    if (!session.send(QStringLiteral("What is in the picture?")) || !finished.wait(60000)) {
        return QStringLiteral("<no answer>");
    }
    const QList<ChatTurn> history = session.history();
    // The whole generated text: a reasoning model's answer cut off while thinking is all thought.
    return history.size() == 2 ? history[1].reasoning + history[1].text : QStringLiteral("<no answer>");
}

}  // namespace

class TestChatDefaults : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theFolderSamplingApplies() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        std::ofstream(std::filesystem::path(dir.path().toStdString()) / "generation_config.json")
            << R"({"do_sample": true, "temperature": 2.0})";
        EngineService service;
        service.load(ernie(GenerationConfigSource::parse(dir.path().toStdString(), "test")));
        QCOMPARE(service.wait_loaded(120s), ServiceState::Ready);
        const QString greedy = QString::fromStdString(greedy_answer(service));
        QVERIFY(!greedy.isEmpty());
        QVERIFY2(chat_answer(service) != greedy, "the chat samples at the file's temperature");
    }

    void withoutTheFileTheAnswerIsGreedy() {
        EngineService service;
        service.load(ernie(GenerationConfigSource::parse("vllm", "test")));
        QCOMPARE(service.wait_loaded(120s), ServiceState::Ready);
        const QString greedy = QString::fromStdString(greedy_answer(service));
        QVERIFY(!greedy.isEmpty());
        QCOMPARE(chat_answer(service), greedy);
    }
};

QTEST_GUILESS_MAIN(TestChatDefaults)
#include "test-chat-defaults.moc"
