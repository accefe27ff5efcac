#include "app/export/office-math.h"

#include <QHash>
#include <QXmlStreamReader>
#include <optional>
#include <vector>

namespace folio {
namespace {

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

Node run(QString text, RunStyle style = {}) {
    Node n;
    n.text = std::move(text);
    n.style = std::move(style);
    return n;
}

const QHash<QString, QString>& symbols() {
    static const QHash<QString, QString> table = [] {
        QHash<QString, QString> t;
        const char* const greek[][2] = {
            {"alpha", "α"},
            {"beta", "β"},
            {"gamma", "γ"},
            {"delta", "δ"},
            {"epsilon", "ϵ"},
            {"varepsilon", "ε"},
            {"zeta", "ζ"},
            {"eta", "η"},
            {"theta", "θ"},
            {"vartheta", "ϑ"},
            {"iota", "ι"},
            {"kappa", "κ"},
            {"lambda", "λ"},
            {"mu", "μ"},
            {"nu", "ν"},
            {"xi", "ξ"},
            {"pi", "π"},
            {"varpi", "ϖ"},
            {"rho", "ρ"},
            {"varrho", "ϱ"},
            {"sigma", "σ"},
            {"varsigma", "ς"},
            {"tau", "τ"},
            {"upsilon", "υ"},
            {"phi", "ϕ"},
            {"varphi", "φ"},
            {"chi", "χ"},
            {"psi", "ψ"},
            {"omega", "ω"},
            {"Gamma", "Γ"},
            {"Delta", "Δ"},
            {"Theta", "Θ"},
            {"Lambda", "Λ"},
            {"Xi", "Ξ"},
            {"Pi", "Π"},
            {"Sigma", "Σ"},
            {"Upsilon", "Υ"},
            {"Phi", "Φ"},
            {"Psi", "Ψ"},
            {"Omega", "Ω"},
            {"times", "×"},
            {"cdot", "⋅"},
            {"div", "÷"},
            {"pm", "±"},
            {"mp", "∓"},
            {"leq", "≤"},
            {"le", "≤"},
            {"geq", "≥"},
            {"ge", "≥"},
            {"neq", "≠"},
            {"ne", "≠"},
            {"approx", "≈"},
            {"equiv", "≡"},
            {"sim", "∼"},
            {"simeq", "≃"},
            {"cong", "≅"},
            {"propto", "∝"},
            {"ll", "≪"},
            {"gg", "≫"},
            {"infty", "∞"},
            {"partial", "∂"},
            {"nabla", "∇"},
            {"to", "→"},
            {"rightarrow", "→"},
            {"leftarrow", "←"},
            {"Rightarrow", "⇒"},
            {"Leftarrow", "⇐"},
            {"leftrightarrow", "↔"},
            {"Leftrightarrow", "⇔"},
            {"mapsto", "↦"},
            {"uparrow", "↑"},
            {"downarrow", "↓"},
            {"in", "∈"},
            {"notin", "∉"},
            {"ni", "∋"},
            {"subset", "⊂"},
            {"supset", "⊃"},
            {"subseteq", "⊆"},
            {"supseteq", "⊇"},
            {"cup", "∪"},
            {"cap", "∩"},
            {"setminus", "∖"},
            {"emptyset", "∅"},
            {"varnothing", "∅"},
            {"forall", "∀"},
            {"exists", "∃"},
            {"neg", "¬"},
            {"lnot", "¬"},
            {"wedge", "∧"},
            {"land", "∧"},
            {"vee", "∨"},
            {"lor", "∨"},
            {"oplus", "⊕"},
            {"otimes", "⊗"},
            {"circ", "∘"},
            {"bullet", "∙"},
            {"star", "⋆"},
            {"ast", "∗"},
            {"prime", "′"},
            {"ldots", "…"},
            {"dots", "…"},
            {"cdots", "⋯"},
            {"vdots", "⋮"},
            {"ddots", "⋱"},
            {"angle", "∠"},
            {"perp", "⊥"},
            {"parallel", "∥"},
            {"mid", "∣"},
            {"hbar", "ℏ"},
            {"ell", "ℓ"},
            {"Re", "ℜ"},
            {"Im", "ℑ"},
            {"aleph", "ℵ"},
            {"degree", "°"},
            {"langle", "⟨"},
            {"rangle", "⟩"},
            {"lfloor", "⌊"},
            {"rfloor", "⌋"},
            {"lceil", "⌈"},
            {"rceil", "⌉"},
            {"vert", "|"},
            {"lvert", "|"},
            {"rvert", "|"},
            {"Vert", "‖"},
            {"lVert", "‖"},
            {"rVert", "‖"},
            {"backslash", "\\"},
            {"triangle", "△"},
            {"therefore", "∴"},
            {"because", "∵"},
            {"models", "⊨"},
            {"vdash", "⊢"},
            {"top", "⊤"},
            {"bot", "⊥"},
            {"lbrace", "{"},
            {"rbrace", "}"},
            {"prec", "≺"},
            {"succ", "≻"},
            {"preceq", "⪯"},
            {"succeq", "⪰"},
            {"sqrt", "√"},
        };
        for (const auto& [name, symbol] : greek) {
            t.insert(QString::fromLatin1(name), QString::fromUtf8(symbol));
        }
        // Spaces: thin, medium, thick, quad, qquad.
        t.insert(QStringLiteral(","), QString(QChar(0x2009)));
        t.insert(QStringLiteral(":"), QString(QChar(0x205F)));
        t.insert(QStringLiteral(";"), QString(QChar(0x2004)));
        t.insert(QStringLiteral(" "), QStringLiteral(" "));
        t.insert(QStringLiteral("quad"), QString(QChar(0x2003)));
        t.insert(QStringLiteral("qquad"), QString(2, QChar(0x2003)));
        for (const char* literal : {"{", "}", "%", "_", "&", "#", "$", "|"}) {
            t.insert(QString::fromLatin1(literal), QString::fromLatin1(literal) == QLatin1String("|")
                                                       ? QStringLiteral("‖")
                                                       : QString::fromLatin1(literal));
        }
        return t;
    }();
    return table;
}

const QHash<QString, QString>& bigOperators() {
    static const QHash<QString, QString> table = {
        {QStringLiteral("sum"), QStringLiteral("∑")},       {QStringLiteral("prod"), QStringLiteral("∏")},
        {QStringLiteral("coprod"), QStringLiteral("∐")},    {QStringLiteral("int"), QStringLiteral("∫")},
        {QStringLiteral("iint"), QStringLiteral("∬")},      {QStringLiteral("iiint"), QStringLiteral("∭")},
        {QStringLiteral("oint"), QStringLiteral("∮")},      {QStringLiteral("bigcup"), QStringLiteral("⋃")},
        {QStringLiteral("bigcap"), QStringLiteral("⋂")},    {QStringLiteral("bigoplus"), QStringLiteral("⨁")},
        {QStringLiteral("bigotimes"), QStringLiteral("⨂")}, {QStringLiteral("bigvee"), QStringLiteral("⋁")},
        {QStringLiteral("bigwedge"), QStringLiteral("⋀")},
    };
    return table;
}

const QHash<QString, QString>& accents() {
    static const QHash<QString, QString> table = {
        {QStringLiteral("hat"), QString(QChar(0x0302))},
        {QStringLiteral("widehat"), QString(QChar(0x0302))},
        {QStringLiteral("tilde"), QString(QChar(0x0303))},
        {QStringLiteral("widetilde"), QString(QChar(0x0303))},
        {QStringLiteral("bar"), QString(QChar(0x0305))},
        {QStringLiteral("vec"), QString(QChar(0x20D7))},
        {QStringLiteral("dot"), QString(QChar(0x0307))},
        {QStringLiteral("ddot"), QString(QChar(0x0308))},
        {QStringLiteral("check"), QString(QChar(0x030C))},
        {QStringLiteral("breve"), QString(QChar(0x0306))},
        {QStringLiteral("acute"), QString(QChar(0x0301))},
        {QStringLiteral("grave"), QString(QChar(0x0300))},
    };
    return table;
}

bool isFunctionName(const QString& name) {
    static const QStringList kNames = {
        QStringLiteral("sin"),    QStringLiteral("cos"),  QStringLiteral("tan"),    QStringLiteral("cot"),
        QStringLiteral("sec"),    QStringLiteral("csc"),  QStringLiteral("arcsin"), QStringLiteral("arccos"),
        QStringLiteral("arctan"), QStringLiteral("sinh"), QStringLiteral("cosh"),   QStringLiteral("tanh"),
        QStringLiteral("log"),    QStringLiteral("ln"),   QStringLiteral("lg"),     QStringLiteral("exp"),
        QStringLiteral("det"),    QStringLiteral("dim"),  QStringLiteral("ker"),    QStringLiteral("arg"),
        QStringLiteral("deg"),    QStringLiteral("gcd"),  QStringLiteral("lim"),    QStringLiteral("limsup"),
        QStringLiteral("liminf"), QStringLiteral("max"),  QStringLiteral("min"),    QStringLiteral("sup"),
        QStringLiteral("inf"),    QStringLiteral("Pr"),   QStringLiteral("hom"),    QStringLiteral("mod"),
        QStringLiteral("tr"),     QStringLiteral("rank"),
    };
    return kNames.contains(name);
}

bool isRelation(const Node& n) {
    static const QString kRelations = QStringLiteral("=<>≤≥≠≈≡∼≃≅∝≪≫→←⇒⇐↔⇔↦∈∉⊂⊃⊆⊇");
    return n.kind == Node::Kind::Run && n.text.size() == 1 && kRelations.contains(n.text.front());
}

// Reads LaTeX math into nodes. Nesting is bounded: beyond kMaxDepth the rest of a group is kept as text.
class Reader {
public:
    explicit Reader(const QString& latex) : s_(latex) {}

    Nodes read() {
        Nodes nodes = list(Stop::End);
        if (pos_ < s_.size()) {  // a '}' without its '{', or an \end without its \begin: kept as text
            nodes.push_back(run(s_.mid(pos_), RunStyle{QStringLiteral("p"), {}}));
        }
        return nodes;
    }

private:
    static constexpr int kMaxDepth = 48;
    enum class Stop { End, Brace, Right, Cell };

    bool at(const QString& word) const { return s_.mid(pos_, word.size()) == word; }

    void skipSpaces() {
        while (pos_ < s_.size() && s_[pos_].isSpace()) {
            ++pos_;
        }
    }

    // The command's name after a backslash: letters, or one other character.
    QString commandName() {
        const qsizetype begin = pos_;
        while (pos_ < s_.size() && s_[pos_].isLetter() && s_[pos_].unicode() < 128) {
            ++pos_;
        }
        if (pos_ == begin && pos_ < s_.size()) {
            ++pos_;
        }
        return s_.mid(begin, pos_ - begin);
    }

    // A {...} argument's raw text (\text, \begin's name, array's column spec).
    QString rawGroup() {
        skipSpaces();
        if (pos_ >= s_.size() || s_[pos_] != QLatin1Char('{')) {
            return {};
        }
        int depth = 0;
        const qsizetype begin = pos_ + 1;
        for (; pos_ < s_.size(); ++pos_) {
            if (s_[pos_] == QLatin1Char('\\')) {
                ++pos_;
                continue;
            }
            if (s_[pos_] == QLatin1Char('{')) {
                ++depth;
            } else if (s_[pos_] == QLatin1Char('}') && --depth == 0) {
                ++pos_;
                return s_.mid(begin, pos_ - 1 - begin);
            }
        }
        return s_.mid(begin);
    }

    // One argument: a group, one command, or one character.
    Nodes argument() {
        skipSpaces();
        if (pos_ >= s_.size()) {
            return {};
        }
        if (s_[pos_] == QLatin1Char('{')) {
            ++pos_;
            Nodes nodes = list(Stop::Brace);
            if (pos_ < s_.size() && s_[pos_] == QLatin1Char('}')) {
                ++pos_;
            }
            return nodes;
        }
        Nodes nodes;
        atom(nodes);
        return nodes;
    }

    Nodes list(Stop stop) {
        Nodes nodes;
        if (++depth_ > kMaxDepth) {
            --depth_;
            const qsizetype begin = pos_;
            pos_ = s_.size();
            nodes.push_back(run(s_.mid(begin), RunStyle{QStringLiteral("p"), {}}));
            return nodes;
        }
        while (true) {
            skipSpaces();
            if (pos_ >= s_.size()) {
                break;
            }
            const QChar c = s_[pos_];
            if (c == QLatin1Char('}') && stop != Stop::End) {
                break;
            }
            if (stop == Stop::Right && at(QStringLiteral("\\right"))) {
                break;
            }
            if (stop == Stop::Cell &&
                (c == QLatin1Char('&') || at(QStringLiteral("\\\\")) || at(QStringLiteral("\\end")))) {
                break;
            }
            if (c == QLatin1Char('}')) {
                break;  // unbalanced at the top: read() keeps the rest as text
            }
            if (c == QLatin1Char('^') || c == QLatin1Char('_')) {
                ++pos_;
                attachScript(nodes, c == QLatin1Char('_'), argument());
                continue;
            }
            atom(nodes);
        }
        --depth_;
        gatherNaryBodies(nodes);
        return nodes;
    }

    void attachScript(Nodes& nodes, bool sub, Nodes script) {
        Node* base = nodes.empty() ? nullptr : &nodes.back();
        if (base && base->kind == Node::Kind::Nary && !(sub ? base->hasSub : base->hasSup)) {
            (sub ? base->b : base->c) = std::move(script);
            (sub ? base->hasSub : base->hasSup) = true;
            return;
        }
        if (!(base && base->kind == Node::Kind::Scripts && !(sub ? base->hasSub : base->hasSup))) {
            Node scripts;
            scripts.kind = Node::Kind::Scripts;
            if (!nodes.empty()) {
                scripts.a.push_back(std::move(nodes.back()));
                nodes.pop_back();
            }
            nodes.push_back(std::move(scripts));
            base = &nodes.back();
        }
        (sub ? base->b : base->c) = std::move(script);
        (sub ? base->hasSub : base->hasSup) = true;
    }

    // A big operator's body: what follows it up to a relation or the end of its group.
    static void gatherNaryBodies(Nodes& nodes) {
        for (size_t i = nodes.size(); i-- > 0;) {
            if (nodes[i].kind != Node::Kind::Nary || !nodes[i].a.empty()) {
                continue;
            }
            size_t end = i + 1;
            while (end < nodes.size() && !isRelation(nodes[end])) {
                ++end;
            }
            for (size_t j = i + 1; j < end; ++j) {
                nodes[i].a.push_back(std::move(nodes[j]));
            }
            nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                        nodes.begin() + static_cast<std::ptrdiff_t>(end));
        }
    }

    // The delimiter after \left or \right: a character, or a command naming one; "." is none.
    QString delimiter() {
        skipSpaces();
        if (pos_ >= s_.size()) {
            return {};
        }
        if (s_[pos_] != QLatin1Char('\\')) {
            const QChar c = s_[pos_++];
            if (c.isHighSurrogate() && pos_ < s_.size() && s_[pos_].isLowSurrogate()) {
                return QString(c) + s_[pos_++];
            }
            return c == QLatin1Char('.') ? QString() : QString(c);
        }
        ++pos_;
        const QString name = commandName();
        return symbols().value(name, name);
    }

    void environment(Nodes& nodes) {
        const QString name = rawGroup();
        if (name == QLatin1String("array")) {
            rawGroup();  // the column spec
        }
        Node matrix;
        matrix.kind = Node::Kind::Matrix;
        std::vector<Nodes> row;
        while (pos_ < s_.size()) {
            row.push_back(list(Stop::Cell));
            if (at(QStringLiteral("&"))) {
                ++pos_;
                continue;
            }
            const bool rowEnds = at(QStringLiteral("\\\\"));
            matrix.rows.push_back(std::move(row));
            row.clear();
            if (rowEnds) {
                pos_ += 2;
                continue;
            }
            break;  // \end or the end of the text
        }
        if (at(QStringLiteral("\\end"))) {
            pos_ += 4;
            rawGroup();
        }
        // A trailing \\ leaves an empty last row.
        if (matrix.rows.size() > 1 && matrix.rows.back().size() == 1 && matrix.rows.back().front().empty()) {
            matrix.rows.pop_back();
        }
        static const QHash<QString, std::pair<QString, QString>> kFences = {
            {QStringLiteral("pmatrix"), {QStringLiteral("("), QStringLiteral(")")}},
            {QStringLiteral("bmatrix"), {QStringLiteral("["), QStringLiteral("]")}},
            {QStringLiteral("Bmatrix"), {QStringLiteral("{"), QStringLiteral("}")}},
            {QStringLiteral("vmatrix"), {QStringLiteral("|"), QStringLiteral("|")}},
            {QStringLiteral("Vmatrix"), {QStringLiteral("‖"), QStringLiteral("‖")}},
            {QStringLiteral("cases"), {QStringLiteral("{"), QString()}},
        };
        const auto fence = kFences.find(name);
        if (fence == kFences.end()) {
            nodes.push_back(std::move(matrix));
            return;
        }
        Node d;
        d.kind = Node::Kind::Delim;
        d.text = fence->first;
        d.text2 = fence->second;
        d.a.push_back(std::move(matrix));
        nodes.push_back(std::move(d));
    }

    static void restyle(Nodes& nodes, const RunStyle& style) {
        for (Node& n : nodes) {
            if (n.kind == Node::Kind::Run) {
                n.style = style;
            }
            restyle(n.a, style);
            restyle(n.b, style);
            restyle(n.c, style);
            for (auto& row : n.rows) {
                for (Nodes& cell : row) {
                    restyle(cell, style);
                }
            }
        }
    }

    void command(Nodes& nodes) {
        ++pos_;  // the backslash
        const QString name = commandName();
        if (name.isEmpty()) {
            return;
        }
        if (name == QLatin1String("frac") || name == QLatin1String("dfrac") ||
            name == QLatin1String("tfrac") || name == QLatin1String("cfrac") ||
            name == QLatin1String("binom")) {
            Node f;
            f.kind = Node::Kind::Frac;
            f.a = argument();
            f.b = argument();
            if (name == QLatin1String("binom")) {
                f.text2 = QStringLiteral("noBar");
                Node d;
                d.kind = Node::Kind::Delim;
                d.text = QStringLiteral("(");
                d.text2 = QStringLiteral(")");
                d.a.push_back(std::move(f));
                nodes.push_back(std::move(d));
            } else {
                nodes.push_back(std::move(f));
            }
            return;
        }
        if (name == QLatin1String("sqrt")) {
            Node r;
            r.kind = Node::Kind::Rad;
            skipSpaces();
            if (pos_ < s_.size() && s_[pos_] == QLatin1Char('[')) {
                const qsizetype close = s_.indexOf(QLatin1Char(']'), pos_);
                if (close > pos_) {
                    r.a = Reader(s_.mid(pos_ + 1, close - pos_ - 1)).read();
                    pos_ = close + 1;
                }
            }
            r.b = argument();
            nodes.push_back(std::move(r));
            return;
        }
        if (const auto op = bigOperators().find(name); op != bigOperators().end()) {
            Node n;
            n.kind = Node::Kind::Nary;
            n.text = *op;
            nodes.push_back(std::move(n));
            return;
        }
        if (const auto accent = accents().find(name); accent != accents().end()) {
            Node n;
            n.kind = Node::Kind::Acc;
            n.text = *accent;
            n.a = argument();
            nodes.push_back(std::move(n));
            return;
        }
        if (name == QLatin1String("overline") || name == QLatin1String("underline")) {
            Node n;
            n.kind = Node::Kind::Bar;
            n.text2 = name == QLatin1String("overline") ? QStringLiteral("top") : QStringLiteral("bot");
            n.a = argument();
            nodes.push_back(std::move(n));
            return;
        }
        if (name == QLatin1String("left")) {
            Node d;
            d.kind = Node::Kind::Delim;
            d.text = delimiter();
            d.a = list(Stop::Right);
            if (at(QStringLiteral("\\right"))) {
                pos_ += 6;
                d.text2 = delimiter();
            }
            nodes.push_back(std::move(d));
            return;
        }
        if (name == QLatin1String("right")) {
            delimiter();  // a \right without its \left
            return;
        }
        if (name == QLatin1String("begin")) {
            environment(nodes);
            return;
        }
        if (name == QLatin1String("text") || name == QLatin1String("textrm") ||
            name == QLatin1String("mbox") || name == QLatin1String("textit") ||
            name == QLatin1String("textbf")) {
            const QString text = rawGroup();
            nodes.push_back(run(text, RunStyle{name == QLatin1String("textbf")   ? QStringLiteral("b")
                                               : name == QLatin1String("textit") ? QStringLiteral("i")
                                                                                 : QStringLiteral("p"),
                                               {}}));
            return;
        }
        static const QHash<QString, RunStyle> kFonts = {
            {QStringLiteral("mathrm"), {QStringLiteral("p"), {}}},
            {QStringLiteral("operatorname"), {QStringLiteral("p"), {}}},
            {QStringLiteral("mathit"), {QStringLiteral("i"), {}}},
            {QStringLiteral("mathbf"), {QStringLiteral("b"), {}}},
            {QStringLiteral("boldsymbol"), {QStringLiteral("bi"), {}}},
            {QStringLiteral("bm"), {QStringLiteral("bi"), {}}},
            {QStringLiteral("mathbb"), {QStringLiteral("p"), QStringLiteral("double-struck")}},
            {QStringLiteral("mathcal"), {QStringLiteral("p"), QStringLiteral("script")}},
            {QStringLiteral("mathscr"), {QStringLiteral("p"), QStringLiteral("script")}},
            {QStringLiteral("mathfrak"), {QStringLiteral("p"), QStringLiteral("fraktur")}},
            {QStringLiteral("mathsf"), {QStringLiteral("p"), QStringLiteral("sans-serif")}},
            {QStringLiteral("mathtt"), {QStringLiteral("p"), QStringLiteral("monospace")}},
        };
        if (const auto font = kFonts.find(name); font != kFonts.end()) {
            Node group;
            group.kind = Node::Kind::Group;
            group.a = argument();
            restyle(group.a, *font);
            nodes.push_back(std::move(group));
            return;
        }
        static const QStringList kIgnored = {
            QStringLiteral("displaystyle"), QStringLiteral("textstyle"), QStringLiteral("scriptstyle"),
            QStringLiteral("limits"),       QStringLiteral("nolimits"),  QStringLiteral("!"),
            QStringLiteral("big"),          QStringLiteral("Big"),       QStringLiteral("bigg"),
            QStringLiteral("Bigg"),         QStringLiteral("bigl"),      QStringLiteral("bigr"),
            QStringLiteral("Bigl"),         QStringLiteral("Bigr"),      QStringLiteral("nonumber"),
            QStringLiteral("notag"),
        };
        if (kIgnored.contains(name)) {
            return;
        }
        if (name == QLatin1String("tag")) {
            const QString tag = rawGroup();
            nodes.push_back(run(QStringLiteral("\u2003(") + tag + QStringLiteral(")"),
                                RunStyle{QStringLiteral("p"), {}}));
            return;
        }
        if (isFunctionName(name)) {
            nodes.push_back(run(name, RunStyle{QStringLiteral("p"), {}}));
            return;
        }
        if (const auto symbol = symbols().find(name); symbol != symbols().end()) {
            nodes.push_back(run(*symbol));
            return;
        }
        // Unknown: kept as its LaTeX, upright, so that nothing is lost.
        nodes.push_back(run(QStringLiteral("\\") + name, RunStyle{QStringLiteral("p"), {}}));
    }

    void atom(Nodes& nodes) {
        const QChar c = s_[pos_];
        if (c == QLatin1Char('\\')) {
            command(nodes);
            return;
        }
        if (c == QLatin1Char('{')) {
            Node group;
            group.kind = Node::Kind::Group;
            group.a = argument();
            nodes.push_back(std::move(group));
            return;
        }
        ++pos_;
        if (c == QLatin1Char('\'')) {
            nodes.push_back(run(QStringLiteral("′")));
            return;
        }
        if (c == QLatin1Char('~')) {
            nodes.push_back(run(QStringLiteral(" ")));
            return;
        }
        // A surrogate pair stays whole.
        if (c.isHighSurrogate() && pos_ < s_.size() && s_[pos_].isLowSurrogate()) {
            nodes.push_back(run(QString(c) + s_[pos_++]));
            return;
        }
        nodes.push_back(run(QString(c)));
    }

    QString s_;
    qsizetype pos_ = 0;
    int depth_ = 0;
};

class Writer {
public:
    explicit Writer(QXmlStreamWriter& xml) : xml_(xml), m_(QString::fromLatin1(kOfficeMathNamespace)) {}

    void nodes(const Nodes& list) {
        for (size_t i = 0; i < list.size(); ++i) {
            const Node& n = list[i];
            if (n.kind == Node::Kind::Run) {
                // Adjacent runs of one style as one m:r.
                QString text = n.text;
                while (i + 1 < list.size() && list[i + 1].kind == Node::Kind::Run &&
                       list[i + 1].style == n.style) {
                    text += list[++i].text;
                }
                runElement(text, n.style);
            } else {
                node(n);
            }
        }
    }

    // A child element holding a list (m:e, m:num, m:sub, ...).
    void part(const char* name, const Nodes& list) {
        xml_.writeStartElement(m_, QLatin1String(name));
        nodes(list);
        xml_.writeEndElement();
    }

private:
    void val(const char* name, const QString& value) {
        xml_.writeEmptyElement(m_, QLatin1String(name));
        xml_.writeAttribute(m_, QStringLiteral("val"), value);
    }

    void runElement(const QString& text, const RunStyle& style) {
        xml_.writeStartElement(m_, QStringLiteral("r"));
        if (!style.sty.isEmpty() || !style.scr.isEmpty()) {
            xml_.writeStartElement(m_, QStringLiteral("rPr"));
            if (!style.scr.isEmpty()) {
                val("scr", style.scr);
            }
            if (!style.sty.isEmpty()) {
                val("sty", style.sty);
            }
            xml_.writeEndElement();
        }
        xml_.writeStartElement(m_, QStringLiteral("t"));
        xml_.writeAttribute(QStringLiteral("xml:space"), QStringLiteral("preserve"));
        xml_.writeCharacters(text);
        xml_.writeEndElement();
        xml_.writeEndElement();
    }

    void node(const Node& n) {
        switch (n.kind) {
            case Node::Kind::Run:
                runElement(n.text, n.style);
                break;
            case Node::Kind::Group:
                nodes(n.a);
                break;
            case Node::Kind::Frac:
                xml_.writeStartElement(m_, QStringLiteral("f"));
                if (!n.text2.isEmpty()) {
                    xml_.writeStartElement(m_, QStringLiteral("fPr"));
                    val("type", n.text2);
                    xml_.writeEndElement();
                }
                part("num", n.a);
                part("den", n.b);
                xml_.writeEndElement();
                break;
            case Node::Kind::Scripts: {
                const char* element = n.hasSub && n.hasSup ? "sSubSup" : n.hasSub ? "sSub" : "sSup";
                xml_.writeStartElement(m_, QLatin1String(element));
                part("e", n.a);
                if (n.hasSub) {
                    part("sub", n.b);
                }
                if (n.hasSup) {
                    part("sup", n.c);
                }
                xml_.writeEndElement();
                break;
            }
            case Node::Kind::Rad:
                xml_.writeStartElement(m_, QStringLiteral("rad"));
                if (n.a.empty()) {
                    xml_.writeStartElement(m_, QStringLiteral("radPr"));
                    val("degHide", QStringLiteral("1"));
                    xml_.writeEndElement();
                }
                part("deg", n.a);
                part("e", n.b);
                xml_.writeEndElement();
                break;
            case Node::Kind::Nary:
                xml_.writeStartElement(m_, QStringLiteral("nary"));
                xml_.writeStartElement(m_, QStringLiteral("naryPr"));
                val("chr", n.text);
                val("limLoc", n.text == QStringLiteral("∫") || n.text == QStringLiteral("∮") ||
                                      n.text == QStringLiteral("∬") || n.text == QStringLiteral("∭")
                                  ? QStringLiteral("subSup")
                                  : QStringLiteral("undOvr"));
                if (!n.hasSub) {
                    val("subHide", QStringLiteral("1"));
                }
                if (!n.hasSup) {
                    val("supHide", QStringLiteral("1"));
                }
                xml_.writeEndElement();
                part("sub", n.b);
                part("sup", n.c);
                part("e", n.a);
                xml_.writeEndElement();
                break;
            case Node::Kind::Delim:
                xml_.writeStartElement(m_, QStringLiteral("d"));
                xml_.writeStartElement(m_, QStringLiteral("dPr"));
                val("begChr", n.text);
                val("endChr", n.text2);
                xml_.writeEndElement();
                part("e", n.a);
                xml_.writeEndElement();
                break;
            case Node::Kind::Acc:
                xml_.writeStartElement(m_, QStringLiteral("acc"));
                xml_.writeStartElement(m_, QStringLiteral("accPr"));
                val("chr", n.text);
                xml_.writeEndElement();
                part("e", n.a);
                xml_.writeEndElement();
                break;
            case Node::Kind::Bar:
                xml_.writeStartElement(m_, QStringLiteral("bar"));
                xml_.writeStartElement(m_, QStringLiteral("barPr"));
                val("pos", n.text2);
                xml_.writeEndElement();
                part("e", n.a);
                xml_.writeEndElement();
                break;
            case Node::Kind::Matrix: {
                size_t columns = 1;
                for (const auto& row : n.rows) {
                    columns = std::max(columns, row.size());
                }
                xml_.writeStartElement(m_, QStringLiteral("m"));
                for (const auto& row : n.rows) {
                    xml_.writeStartElement(m_, QStringLiteral("mr"));
                    for (size_t c = 0; c < columns; ++c) {
                        part("e", c < row.size() ? row[c] : Nodes{});
                    }
                    xml_.writeEndElement();
                }
                xml_.writeEndElement();
                break;
            }
        }
    }

    QXmlStreamWriter& xml_;
    QString m_;
};

}  // namespace

QString xmlSafeText(const QString& text) {
    QString clean;
    clean.reserve(text.size());
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (c.isHighSurrogate()) {
            if (i + 1 < text.size() && text[i + 1].isLowSurrogate()) {
                clean.append(c);
                clean.append(text[++i]);
            }
            continue;
        }
        if (c.isLowSurrogate() || c.unicode() == 0xFFFE || c.unicode() == 0xFFFF) {
            continue;
        }
        if (c == QLatin1Char('\t') || c.unicode() >= 0x20) {
            clean.append(c);
        }
    }
    return clean;
}

void writeOfficeMath(QXmlStreamWriter& xml, const QString& latex) {
    const Nodes tree = Reader(xmlSafeText(latex)).read();
    Writer writer(xml);
    writer.part("oMath", tree);
}

std::vector<InlineSegment> splitInlineMath(const QString& text) {
    std::vector<InlineSegment> segments;
    QString plain;
    const auto flush = [&] {
        if (!plain.isEmpty()) {
            segments.push_back({false, plain});
            plain.clear();
        }
    };
    qsizetype i = 0;
    while (i < text.size()) {
        const QChar c = text[i];
        if (c == QLatin1Char('\\') && i + 1 < text.size() && text[i + 1] == QLatin1Char('$')) {
            plain += QStringLiteral("$");  // an escaped dollar
            i += 2;
            continue;
        }
        if (c == QLatin1Char('\\') && i + 1 < text.size() && text[i + 1] == QLatin1Char('(')) {
            const qsizetype close = text.indexOf(QStringLiteral("\\)"), i + 2);
            if (close > i + 2) {
                flush();
                segments.push_back({true, text.mid(i + 2, close - i - 2).trimmed()});
                i = close + 2;
                continue;
            }
        }
        if (c == QLatin1Char('$') && i + 1 < text.size() && text[i + 1] != QLatin1Char('$') &&
            !text[i + 1].isSpace()) {
            qsizetype close = i + 1;
            while ((close = text.indexOf(QLatin1Char('$'), close)) > i) {
                const bool escaped = text[close - 1] == QLatin1Char('\\');
                const bool spaced = text[close - 1].isSpace();
                const bool digitAfter = close + 1 < text.size() && text[close + 1].isDigit();
                if (!escaped && !spaced && !digitAfter) {
                    break;
                }
                ++close;
            }
            if (close > i + 1) {
                flush();
                segments.push_back({true, text.mid(i + 1, close - i - 1)});
                i = close + 1;
                continue;
            }
        }
        plain += c;
        ++i;
    }
    flush();
    return segments;
}

QString officeMathOutline(const QString& latex) {
    QString out;
    {
        QXmlStreamWriter xml(&out);
        xml.writeStartElement(QStringLiteral("root"));
        xml.writeNamespace(QString::fromLatin1(kOfficeMathNamespace), QStringLiteral("m"));
        writeOfficeMath(xml, latex);
        xml.writeEndElement();
    }
    // Each element as name[=val][:text], its children in parentheses.
    struct Entry {
        QString label;
        QStringList children;
    };
    std::vector<Entry> stack(1);
    QXmlStreamReader reader(out);
    while (!reader.atEnd()) {
        reader.readNext();
        if (reader.isStartElement() && reader.name() != QLatin1String("root")) {
            Entry entry;
            entry.label = reader.name().toString();
            const QStringView value =
                reader.attributes().value(QString::fromLatin1(kOfficeMathNamespace), QStringLiteral("val"));
            if (!value.isNull()) {
                entry.label += QLatin1Char('=') + value.toString();
            }
            stack.push_back(std::move(entry));
        } else if (reader.isEndElement() && reader.name() != QLatin1String("root")) {
            Entry entry = std::move(stack.back());
            stack.pop_back();
            stack.back().children.push_back(
                entry.children.isEmpty() ? entry.label
                                         : entry.label + QLatin1Char('(') +
                                               entry.children.join(QLatin1Char(',')) + QLatin1Char(')'));
        } else if (reader.isCharacters() && stack.size() > 1) {
            stack.back().label += QLatin1Char(':') + reader.text().toString();
        }
    }
    return stack.front().children.join(QLatin1Char(','));
}

}  // namespace folio
