// The HTML the result view shows: a page shell that loads KaTeX from Debian's libjs-katex (offline) and
// small functions to replace a page or a block and highlight one, and each page's and block's HTML.
#pragma once

#include <QSet>
#include <QString>
#include <QUrl>

#include "app/document-model/document-model.h"
#include "app/export/katex-typesetter.h"

namespace folio {

// The shell: <!DOCTYPE html> (KaTeX needs standards mode), KaTeX, the style and the script.
QString resultShellHtml();
// The base URL that the shell's relative KaTeX links resolve against.
QUrl resultShellBaseUrl();

// A block as the result view shows it: a <div class="block"> carrying its page and id, with its content
// (streamed text as plain text while recognition runs); dimmed where its label does not reach Markdown
// (the labels chosen in the settings).
QString resultBlockHtml(const PageEntry& page, int pageNumber, const BlockResult& block,
                        const QSet<QString>& markdownLabels);
// A page's blocks in reading order, or its state (waiting, error).
QString resultPageHtml(const PageEntry& page, int pageNumber, const QSet<QString>& markdownLabels);

// Text as a JavaScript string literal.
QString jsString(const QString& text);

}  // namespace folio
