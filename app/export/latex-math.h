// LaTeX math read into a tree of Office Math's shapes (runs, fractions, scripts, radicals, big operators,
// delimiters, accents, bars, matrices), which office-math.h writes as OMML. A small reader: groups, ^ and _,
// \frac, \sqrt, big operators with their limits, \left...\right, accents, \overline, function names, font
// commands, matrix, cases and aligned environments, Greek letters and the common symbols as Unicode. What it
// does not know (an unknown command, an unbalanced brace) stays as its LaTeX text; nesting is bounded.
#pragma once

#include <QString>
#include <vector>

namespace folio::latex_math {

// The m:sty / m:scr of a run: upright, bold, or a script such as double-struck.
struct RunStyle {
    QString sty;  // "", "p" (plain), "b" (bold), "bi"
    QString scr;  // "", "double-struck", "script", "fraktur", "sans-serif", "monospace"
    bool operator==(const RunStyle&) const = default;
};

struct Node;
using Nodes = std::vector<Node>;

struct Node {
    enum class Kind { Run, Group, Frac, Scripts, Rad, Nary, Delim, Acc, Bar, Matrix };
    Kind kind = Kind::Run;
    QString text;   // Run: its text; Nary, Acc: the character; Delim: the opening character
    QString text2;  // Delim: the closing character; Bar: "top" or "bot"; Frac: "noBar" for \binom
    RunStyle style;
    Nodes a;  // Group, Delim, Acc, Bar: the body; Frac: numerator; Scripts: base; Rad: degree; Nary: body
    Nodes b;  // Frac: denominator; Scripts, Nary: subscript; Rad: body
    Nodes c;  // Scripts, Nary: superscript
    bool hasSub = false;
    bool hasSup = false;
    std::vector<std::vector<Nodes>> rows;  // Matrix: rows of cells
};

inline Node run(QString text, RunStyle style = {}) {
    Node n;
    n.text = std::move(text);
    n.style = std::move(style);
    return n;
}

// The formula (without $ delimiters) as nodes.
Nodes read(const QString& latex);

}  // namespace folio::latex_math
