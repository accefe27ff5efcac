#include "ui/result-view/result-html.h"

#include <QBuffer>
#include <QCoreApplication>
#include <algorithm>
#include <vector>

#include "app/export/document-writer.h"
#include "app/export/html-writer.h"
#include "app/export/markdown-block.h"
#include "ui/page-view/label-colors.h"

namespace folio {

namespace {

// A string of the result view in the interface's language.
QString text(const char* source) {
    return QCoreApplication::translate("folio::ResultView", source);
}

const char* const kShellStyle = R"(
:root { color-scheme: light; }
body { font-family: "Noto Sans", "Segoe UI", "Helvetica Neue", Arial, sans-serif; font-size: 14px;
       line-height: 1.55; color: #1f2328; margin: 0; padding: 16px 20px 40px; background: #fff; }
section.page { margin-bottom: 22px; }
section.page > .page-head { font-size: 11px; letter-spacing: .06em; text-transform: uppercase; color: #8b949e;
       border-bottom: 1px solid #e5e7eb; padding-bottom: 3px; margin-bottom: 8px; }
.block { position: relative; border-left: 3px solid transparent; padding: 2px 8px 2px 10px; margin: 2px 0 6px;
       border-radius: 3px; cursor: pointer; transition: background .15s; overflow-wrap: anywhere; }
.block:hover { background: #f6f8fa; }
.block.selected { background: #fff8e1; border-left-color: var(--label-color, #f59e0b);
       box-shadow: 0 0 0 1px #f5d27a inset; }
.block .tag { float: right; margin: 0 0 2px 8px; font-size: 10px; line-height: 1.6;
       color: var(--label-color, #888); opacity: .75; }
.block::after { content: ""; display: block; clear: both; }
.block.aside { color: #6e7781; font-size: 12.5px; }
.block.pending { color: #8b949e; font-style: italic; }
.block.streaming p { color: #57606a; }
.block.error { color: #b91c1c; }
.block p { margin: 2px 0; }
h1 { font-size: 1.5em; margin: .2em 0; } h2 { font-size: 1.25em; margin: .2em 0; }
h3, h4, h5, h6 { font-size: 1.08em; margin: .2em 0; }
table { border-collapse: collapse; margin: 6px auto; font-size: 13px; overflow-wrap: normal; }
td, th { border: 1px solid #c9d1d9; padding: 3px 8px; }
figure { margin: 4px 0; text-align: center; } figure img { max-width: 100%; border: 1px solid #eee; }
.caption { text-align: center; color: #57606a; font-size: 13px; }
.formula { text-align: center; margin: 4px 0; overflow-x: auto; }
pre { white-space: pre-wrap; font-size: 12.5px; background: #f6f8fa; padding: 6px; border-radius: 4px; }
.state { color: #8b949e; font-style: italic; padding: 6px 10px; }
mark.find { background: #ffe066; color: inherit; border-radius: 2px; }
.state.error { color: #b91c1c; font-style: normal; }
)";

const char* const kShellScript = R"(
var folio = {
  selected: null,
  typeset: function (root) {
    if (typeof katex === 'undefined') return;
    root.querySelectorAll('span.math').forEach(function (el) {
      if (el.dataset.done) return;
      var display = el.classList.contains('display');
      var tex = el.textContent.replace(/^\$\$?/, '').replace(/\$\$?$/, '');
      try { katex.render(tex, el, { displayMode: display, throwOnError: false }); el.dataset.done = '1'; }
      catch (e) {}
    });
  },
  section: function (p) {
    var id = 'page-' + p, s = document.getElementById(id);
    if (s) return s;
    s = document.createElement('section');
    s.className = 'page'; s.id = id; s.dataset.page = p;
    var doc = document.getElementById('doc'), next = null;
    for (var c = doc.firstElementChild; c; c = c.nextElementSibling) {
      if (parseInt(c.dataset.page) > p) { next = c; break; }
    }
    doc.insertBefore(s, next);
    return s;
  },
  clear: function () { document.getElementById('doc').innerHTML = ''; folio.selected = null; },
  query: null,
  find: function (text, cs) {
    var doc = document.getElementById('doc');
    doc.querySelectorAll('mark.find').forEach(function (m) {
      var parent = m.parentNode;
      parent.replaceChild(document.createTextNode(m.textContent), m);
      parent.normalize();
    });
    folio.query = text ? [text, cs] : null;
    folio.markFound(doc);
    return doc.querySelectorAll('mark.find').length;
  },
  markFound: function (root) {
    if (!folio.query) return;
    var text = folio.query[0], cs = folio.query[1], needle = cs ? text : text.toLowerCase();
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, { acceptNode: function (n) {
      var e = n.parentElement;
      return !e || e.closest('.tag, .page-head, .katex-mathml, mark.find') ? NodeFilter.FILTER_REJECT
                                                                           : NodeFilter.FILTER_ACCEPT;
    } });
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    nodes.forEach(function (n) {
      var s = n.nodeValue, hay = cs ? s : s.toLowerCase();
      if (hay.length !== s.length) { hay = s; }
      var at = hay.indexOf(needle);
      if (at < 0) return;
      var frag = document.createDocumentFragment(), from = 0;
      for (; at >= 0; at = hay.indexOf(needle, from)) {
        frag.appendChild(document.createTextNode(s.slice(from, at)));
        var m = document.createElement('mark');
        m.className = 'find';
        m.textContent = s.slice(at, at + text.length);
        frag.appendChild(m);
        from = at + text.length;
      }
      frag.appendChild(document.createTextNode(s.slice(from)));
      n.parentNode.replaceChild(frag, n);
    });
  },
  setPage: function (p, html) {
    var s = folio.section(p);
    s.innerHTML = html;
    folio.typeset(s);
    folio.markFound(s);
    if (folio.selected) folio.mark(folio.selected[0], folio.selected[1], false);
  },
  setBlock: function (p, b, html) {
    var e = document.getElementById('b-' + p + '-' + b);
    if (!e) return;
    var t = document.createElement('div');
    t.innerHTML = html;
    var n = t.firstElementChild;
    if (!n) return;
    e.replaceWith(n);
    folio.typeset(n);
    folio.markFound(n);
    if (folio.selected && folio.selected[0] == p && folio.selected[1] == b) n.classList.add('selected');
  },
  mark: function (p, b, scroll) {
    document.querySelectorAll('.block.selected').forEach(function (e) { e.classList.remove('selected'); });
    folio.selected = (p < 0) ? null : [p, b];
    var e = document.getElementById('b-' + p + '-' + b);
    if (!e) return false;
    e.classList.add('selected');
    if (scroll) e.scrollIntoView({ block: 'center' });
    return true;
  },
  scrollToPage: function (p) {
    var s = document.getElementById('page-' + p);
    if (s) s.scrollIntoView({ block: 'start' });
    return !!s;
  },
  highlighted: function () {
    var e = document.querySelector('.block.selected');
    return e ? e.id : '';
  }
};
document.addEventListener('click', function (ev) {
  var e = ev.target.closest ? ev.target.closest('.block') : null;
  if (!e) return;
  folio.mark(parseInt(e.dataset.page), parseInt(e.dataset.block), false);
  console.log('folio:block:' + e.dataset.page + ':' + e.dataset.block);
});
)";

bool isAsideLabel(const QString& label, const QSet<QString>& chosen) {
    return !markdownLabels().contains(label) || !chosen.contains(label);
}

QString imageDataUrl(const QImage& image) {
    QImage small = image.width() > 640 ? image.scaledToWidth(640, Qt::SmoothTransformation) : image;
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    small.save(&buffer, "JPEG", 85);
    return QStringLiteral("data:image/jpeg;base64,") + QString::fromLatin1(bytes.toBase64());
}

QString plainParagraphs(const QString& text) {
    QString out;
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        out += QStringLiteral("<p>") + line.toHtmlEscaped() + QStringLiteral("</p>");
    }
    return out;
}

}  // namespace

QUrl resultShellBaseUrl() {
    return QUrl::fromLocalFile(katexDirectory() + QLatin1Char('/'));
}

QString resultShellHtml() {
    return QStringLiteral(
               "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
               "<link rel=\"stylesheet\" href=\"katex.min.css\">\n"
               "<script src=\"katex.min.js\"></script>\n"
               "<style>%1</style>\n<script>%2</script>\n"
               "</head><body><div id=\"doc\"></div></body></html>\n")
        .arg(QString::fromUtf8(kShellStyle), QString::fromUtf8(kShellScript));
}

QString resultBlockHtml(const PageEntry& page, int pageNumber, const BlockResult& block,
                        const QSet<QString>& markdownLabels) {
    QStringList classes{QStringLiteral("block")};
    QString inner;
    const bool follower = block.groupId >= 0 && block.groupId != block.id;
    if (!block.error.isEmpty()) {
        classes << QStringLiteral("error");
        inner = QStringLiteral("<p>%1</p>").arg(block.error.toHtmlEscaped());
    } else if (page.state == PageState::Partial && block.content.isEmpty() && !block.task.isEmpty() &&
               !block.recognising && !follower) {
        // The run stopped before this block: Run goes on with the page.
        classes << QStringLiteral("pending");
        inner =
            QStringLiteral("<p>%1</p>")
                .arg(text(QT_TRANSLATE_NOOP("folio::ResultView", "not recognised: the run stopped first")));
    } else if (page.state == PageState::LaidOut || block.recognising) {
        // Still being recognised: the text so far, as text.
        if (block.content.isEmpty()) {
            classes << QStringLiteral("pending");
            inner = follower ? QStringLiteral("<p>%1</p>")
                                   .arg(text(QT_TRANSLATE_NOOP("folio::ResultView", "read with block %1"))
                                            .arg(block.groupId + 1))
                    : block.task.isEmpty()
                        ? QStringLiteral("<p>%1</p>").arg(labelTitle(block.label))
                        : QStringLiteral("<p>%1</p>")
                              .arg(text(QT_TRANSLATE_NOOP("folio::ResultView", "recognising…")));
        } else {
            classes << QStringLiteral("streaming");
            inner = plainParagraphs(block.content);
        }
    } else {
        const QString link = block.image.isNull() ? QString() : imageDataUrl(block.image);
        inner = htmlOfBlock(block, link, page.size.width() > 0 ? page.size.width() : page.result.width);
        if (inner.trimmed().isEmpty()) {
            classes << QStringLiteral("pending");
            inner = follower ? QStringLiteral("<p>%1</p>")
                                   .arg(text(QT_TRANSLATE_NOOP("folio::ResultView", "read with block %1"))
                                            .arg(block.groupId + 1))
                             : QStringLiteral("<p>%1</p>")
                                   .arg(text(QT_TRANSLATE_NOOP("folio::ResultView", "(empty)")));
        }
    }
    if (isAsideLabel(block.label, markdownLabels)) {
        classes << QStringLiteral("aside");
    }
    return QStringLiteral(
               "<div class=\"%1\" id=\"b-%2-%3\" data-page=\"%2\" data-block=\"%3\" "
               "style=\"--label-color:%4\"><span class=\"tag\">%5</span>%6</div>\n")
        .arg(classes.join(QLatin1Char(' ')))
        .arg(pageNumber)
        .arg(block.id)
        .arg(labelColor(block.label).name(), labelTitle(block.label).toHtmlEscaped(), inner);
}

QString resultPageHtml(const PageEntry& page, int pageNumber, const QSet<QString>& markdownLabels) {
    QString html = QStringLiteral("<div class=\"page-head\">%1</div>\n")
                       .arg(text(QT_TRANSLATE_NOOP("folio::ResultView", "Page %1")).arg(pageNumber + 1));
    if (!page.result.error.isEmpty()) {
        return html +
               QStringLiteral("<div class=\"state error\">%1</div>").arg(page.result.error.toHtmlEscaped());
    }
    if (page.state == PageState::Pending) {
        return html + QStringLiteral("<div class=\"state\">%1</div>")
                          .arg(text(QT_TRANSLATE_NOOP("folio::ResultView", "Not recognised yet.")));
    }
    if (page.result.blocks.empty()) {
        return html + QStringLiteral("<div class=\"state\">%1</div>")
                          .arg(text(QT_TRANSLATE_NOOP("folio::ResultView", "No blocks on this page.")));
    }
    // Reading order first, blocks outside it after.
    std::vector<const BlockResult*> blocks;
    for (const BlockResult& block : page.result.blocks) {
        blocks.push_back(&block);
    }
    std::stable_sort(blocks.begin(), blocks.end(), [](const BlockResult* a, const BlockResult* b) {
        const int ka = a->order > 0 ? a->order : 1 << 20;
        const int kb = b->order > 0 ? b->order : 1 << 20;
        return ka < kb;
    });
    for (const BlockResult* block : blocks) {
        html += resultBlockHtml(page, pageNumber, *block, markdownLabels);
    }
    return html;
}

QString jsString(const QString& text) {
    QString out;
    out.reserve(text.size() + 2);
    out += QLatin1Char('"');
    for (const QChar c : text) {
        switch (c.unicode()) {
            case '"':
                out += QStringLiteral("\\\"");
                break;
            case '\\':
                out += QStringLiteral("\\\\");
                break;
            case '\n':
                out += QStringLiteral("\\n");
                break;
            case '\r':
                out += QStringLiteral("\\r");
                break;
            case 0x2028:
                out += QStringLiteral("\\u2028");
                break;
            case 0x2029:
                out += QStringLiteral("\\u2029");
                break;
            case '<':
                out += QStringLiteral("\\x3c");
                break;
            default:
                out += c;
        }
    }
    out += QLatin1Char('"');
    return out;
}

}  // namespace folio
