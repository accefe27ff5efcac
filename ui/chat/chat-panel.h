// The chat panel: a conversation about the current document's pages or any image, kept per document. The user
// attaches the current page, a region of it (dragged in a picker, or handed over by the page view through
// attachImage), image or video files (chosen, or dropped on the panel), asks, and watches the answer stream
// in, a reasoning model's thought folded above it; Stop ends it, Copy takes an answer. With "Ask the
// document" on, questions are answered from the document's recognised blocks, and the answer's citations
// are links that select their block. The panel talks to the
// chat model where one is loaded; without one it uses the OCR model and says so, offering to download a chat
// model.
#pragma once

#include <QFrame>
#include <QImage>
#include <QLabel>
#include <QList>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QThreadPool>
#include <QToolButton>
#include <QVBoxLayout>
#include <QWidget>
#include <functional>

#include <memory>

#include "app/chat/chat-session.h"
#include "app/chat/document-context.h"

namespace folio {

class ChatMessageView;

class ChatPanel : public QWidget {
    Q_OBJECT

public:
    // The image of the page the user is looking at; a null image when there is none.
    using PageProvider = std::function<QImage()>;
    // The current document's recognised blocks (Ask the document); null or empty where it has none.
    using DocumentContextProvider = std::function<std::shared_ptr<const DocumentContext>()>;

    explicit ChatPanel(EngineService& service, QWidget* parent = nullptr);

    ChatSession* session() const { return session_; }
    void setPageProvider(PageProvider provider);
    void setDocumentContextProvider(DocumentContextProvider provider);
    // The "Ask the document" switch (tests).
    QToolButton* askDocumentButton() const { return askDocument_; }
    // The document the conversation is about (its path; "" for none): each keeps its own history.
    void setDocument(const QString& key);

    // What send() would attach now.
    QList<QImage> attachments() const { return attachments_; }
    QList<Video> videoAttachments() const { return videos_; }
    // Video files being read (off the GUI thread).
    int videosLoading() const { return videosLoading_; }
    // The question being written.
    QString draft() const;
    void setDraft(const QString& text);
    // The views of the current history, in order (tests).
    QList<ChatMessageView*> messageViews() const { return views_; }
    // The note shown while no chat model is loaded, and its download button (tests).
    QWidget* modelNote() const { return modelNote_; }
    QString modelNoteText() const { return modelNoteText_->text(); }
    QPushButton* downloadChatModelButton() const { return downloadChat_; }

Q_SIGNALS:
    // The user asked to download a chat model (the model manager, on its chat models).
    void chatModelDownloadRequested();
    // A citation in an answer was clicked: the block it names (page position from 0, block id).
    void citationActivated(int page, int blockId);

public Q_SLOTS:
    // Attaches an image with a short name (a region the page view selected, a figure).
    void attachImage(const QImage& image, const QString& name = QString());
    void attachCurrentPage();
    // Opens the region picker on the current page.
    void attachRegion();
    // Opens a file dialog for image and video files.
    void attachFiles();
    // Attaches image and video files (a video as the frames sampled from it, 2 a second as FastDeploy samples
    // them for ERNIE-4.5-VL); those that cannot be read are reported.
    // Videos are read in the background and attached when their frames are in.
    void attachFilePaths(const QStringList& paths);
    // Attaches a video's sampled frames.
    void attachVideo(const Video& video, const QString& name);
    void clearAttachments();
    // Sends the draft with the attachments.
    void send();
    void stop();
    void newConversation();
    // Says which model answers: the chat model, or the OCR model with the offer of a chat model. Called when
    // the engine's models change.
    void updateModel();

protected:
    void changeEvent(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    // A text-only chat model takes no attachments: says so (and true) when one is tried.
    bool refusesAttachments();
    void retranslate();
    void rebuild();
    void addView(const ChatTurn& turn);
    void refreshAttachments();
    void updateButtons();
    void showMessage(const QString& message, bool error);
    void scrollToEnd();
    void loadVideo(const QString& path);

    ChatSession* session_;
    PageProvider pageProvider_;
    DocumentContextProvider contextProvider_;
    QList<QImage> attachments_;
    QStringList attachmentNames_;
    QList<Video> videos_;
    QStringList videoNames_;
    QList<ChatMessageView*> views_;

    QLabel* title_;
    QToolButton* newButton_;
    QScrollArea* scroll_;
    QWidget* messages_;
    QVBoxLayout* messagesLayout_;
    QLabel* placeholder_;
    QFrame* modelNote_;
    QLabel* modelNoteText_;
    QPushButton* downloadChat_;
    QWidget* attachmentBar_;
    QHBoxLayout* attachmentLayout_;
    QLabel* notice_;
    QPlainTextEdit* input_;
    QToolButton* attachButton_;
    QAction* attachPageAction_;
    QAction* attachRegionAction_;
    QAction* attachFilesAction_;
    QToolButton* askDocument_;
    QPushButton* sendButton_;
    QPushButton* stopButton_;
    int videosLoading_ = 0;
    // Last, so that it is destroyed first: it waits for a video being read, whose result then goes nowhere.
    QThreadPool videoLoads_;
};

}  // namespace folio
