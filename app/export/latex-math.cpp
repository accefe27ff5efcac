#include "app/export/latex-math.h"

#include <QHash>
#include <QStringList>

namespace folio::latex_math {
namespace {

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

}  // namespace

Nodes read(const QString& latex) {
    return Reader(latex).read();
}

}  // namespace folio::latex_math
