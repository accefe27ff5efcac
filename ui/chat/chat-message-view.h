// One turn of a chat as the chat panel shows it: who speaks, the attached images as thumbnails, the text
// (an answer rendered as Markdown as it streams), its state, and a button that copies an answer.
#pragma once

#include <QFrame>
#include <QLabel>
#include <QToolButton>

#include "app/chat/chat-session.h"

namespace folio {

class MessageText;

class ChatMessageView : public QFrame {
    Q_OBJECT

public:
    explicit ChatMessageView(const ChatTurn& turn, QWidget* parent = nullptr);

    void setTurn(const ChatTurn& turn);
    void appendText(const QString& delta);
    QString text() const { return text_; }
    // Puts the text on the clipboard.
    void copy();

Q_SIGNALS:
    void copied();

protected:
    void changeEvent(QEvent* event) override;

private:
    void retranslate();
    void showText();

    ChatTurn::Role role_;
    ChatTurn::State state_;
    QString text_;
    QString error_;
    QLabel* who_;
    MessageText* body_;
    QLabel* status_;
    QToolButton* copy_;
    QWidget* thumbnails_;
};

}  // namespace folio
