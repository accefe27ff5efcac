// Formulas typeset for the HTML export by KaTeX, offline: Debian's libjs-katex (katex.min.js) run in Qt's
// JavaScript engine turns each formula into KaTeX's HTML (with MathML beside it), so that the exported page
// shows typeset formulas without running a script; the page needs only KaTeX's stylesheet and fonts, which
// copyAssets() puts beside it.
#pragma once

#include <QString>
#include <memory>

namespace folio {

// Where KaTeX's files are (Debian's libjs-katex: katex.min.js, katex.min.css, fonts/); FOLIO_KATEX_DIR
// overrides.
QString katexDirectory();

// One typesetter a thread: the JavaScript engine it holds belongs to the thread that first calls ready().
class KatexTypesetter {
public:
    explicit KatexTypesetter(QString directory = katexDirectory());
    ~KatexTypesetter();
    KatexTypesetter(const KatexTypesetter&) = delete;
    KatexTypesetter& operator=(const KatexTypesetter&) = delete;

    // Loads KaTeX the first time (its script run once, about a tenth of a second); false, with problem()
    // saying why, where its files are missing or do not run.
    bool ready();
    QString problem() const { return problem_; }

    // A formula's LaTeX (without delimiters) as KaTeX's HTML; LaTeX KaTeX cannot parse comes back as KaTeX
    // shows it, the source in red with the parse error as its title. Empty where KaTeX is not ready.
    QString render(const QString& tex, bool display);

    // The HTML with each math span that htmlWithMath() and htmlOfBlock() write (<span class="math inline">
    // or "math display", holding the escaped LaTeX with or without its $ or $$) replaced by the typeset
    // formula. `typeset` counts those replaced, `left` those left as they were (KaTeX not ready, or failing
    // on the formula); an empty span counts as neither.
    QString typesetMathSpans(const QString& html, int* typeset = nullptr, int* left = nullptr);

    // Copies KaTeX's stylesheet (katex.min.css) and its fonts (fonts/) into `folder`, creating it; a file
    // already there with the same size is kept. Throws folio::Error naming the file that cannot be copied.
    void copyAssets(const QString& folder) const;

private:
    struct Script;  // Qt's JavaScript engine with KaTeX loaded, and its render function

    QString directory_;
    std::unique_ptr<Script> script_;
    bool tried_ = false;
    QString problem_;
};

}  // namespace folio
