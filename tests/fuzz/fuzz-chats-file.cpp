// Fuzzes the chats file's reader: any bytes either throw folio::Error or give conversations whose turns are
// questions and answers by pairs, none empty, that write and read back to the same turns.
#include <QByteArray>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "app/chat/chats-file.h"
#include "engine/common/error.h"

namespace {

void check(bool condition) {
    if (!condition) {
        std::abort();
    }
}

void checkPairs(const folio::ChatHistories& histories) {
    for (auto it = histories.begin(); it != histories.end(); ++it) {
        const QList<folio::ChatTurn>& turns = it.value();
        check(!turns.isEmpty() && turns.size() % 2 == 0);
        for (qsizetype i = 0; i < turns.size(); ++i) {
            check(turns[i].role ==
                  (i % 2 == 0 ? folio::ChatTurn::Role::User : folio::ChatTurn::Role::Assistant));
            check(turns[i].state != folio::ChatTurn::State::Streaming);
            check(turns[i].videosNotKept >= 0);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    folio::ChatHistories histories;
    try {
        histories = folio::parseChatsJson(bytes, QStringLiteral("fuzz.json"));
    } catch (const folio::Error&) {
        return 0;
    }
    checkPairs(histories);
    const folio::ChatHistories again =
        folio::parseChatsJson(folio::chatsJson(histories), QStringLiteral("again"));
    check(again.size() == histories.size());
    for (auto it = histories.begin(); it != histories.end(); ++it) {
        const QList<folio::ChatTurn>& turns = again.value(it.key());
        check(turns.size() == it.value().size());
        for (qsizetype i = 0; i < turns.size(); ++i) {
            check(turns[i].text == it.value()[i].text && turns[i].reasoning == it.value()[i].reasoning);
            check(turns[i].images.size() == it.value()[i].images.size());
            check(turns[i].pagesLeftOut == it.value()[i].pagesLeftOut);
        }
    }
    return 0;
}
