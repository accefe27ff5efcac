#include "engine/chat-template/jinja-parser.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <system_error>

#include "engine/common/error.h"

namespace folio::jinja {

namespace {

// Nesting of expressions and blocks; deeper templates are refused rather than exhausting the stack.
constexpr int kMaxParseDepth = 128;

class Parser {
public:
    Parser(const Template& tmpl, std::vector<Token> tokens) : tmpl_(tmpl), tokens_(std::move(tokens)) {}

    Body parse_all() {
        Body body = parse_body({});
        return body;
    }

private:
    class DepthGuard {
    public:
        explicit DepthGuard(Parser& parser) : parser_(parser) {
            if (++parser_.depth_ > kMaxParseDepth) {
                parser_.error(parser_.current().offset, "template nested too deeply (more than " +
                                                            std::to_string(kMaxParseDepth) + " levels)");
            }
        }
        ~DepthGuard() { --parser_.depth_; }
        DepthGuard(const DepthGuard&) = delete;
        DepthGuard& operator=(const DepthGuard&) = delete;

    private:
        Parser& parser_;
    };

    [[noreturn]] void error(size_t offset, const std::string& what) const {
        fail(describe_position(tmpl_.source, tmpl_.origin, offset), ": ", what);
    }

    const Token& current() const { return tokens_[pos_]; }
    const Token& peek(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
    const Token& advance() {
        const Token& token = tokens_[pos_];
        if (pos_ + 1 < tokens_.size()) {
            ++pos_;
        }
        return token;
    }
    bool is_op(const char* op) const { return current().type == TokenType::Operator && current().text == op; }
    bool is_name(const char* name) const {
        return current().type == TokenType::Name && current().text == name;
    }
    bool skip_op(const char* op) {
        if (is_op(op)) {
            advance();
            return true;
        }
        return false;
    }
    bool skip_name(const char* name) {
        if (is_name(name)) {
            advance();
            return true;
        }
        return false;
    }

    static std::string describe(const Token& token) {
        switch (token.type) {
            case TokenType::End:
                return "end of template";
            case TokenType::BlockEnd:
                return "'%}'";
            case TokenType::VariableEnd:
                return "'}}'";
            case TokenType::BlockBegin:
                return "'{%'";
            case TokenType::VariableBegin:
                return "'{{'";
            case TokenType::Text:
                return "text";
            case TokenType::String:
                return "string";
            default:
                return "'" + token.text + "'";
        }
    }

    void expect_op(const char* op) {
        if (!skip_op(op)) {
            error(current().offset, std::string("expected '") + op + "', got " + describe(current()));
        }
    }
    std::string expect_name() {
        if (current().type != TokenType::Name) {
            error(current().offset, "expected a name, got " + describe(current()));
        }
        return advance().text;
    }
    void expect_block_end() {
        if (current().type != TokenType::BlockEnd) {
            error(current().offset, "expected end of statement block '%}', got " + describe(current()));
        }
        advance();
    }

    ExprPtr make(Expr::Kind kind, size_t offset) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->offset = offset;
        return e;
    }

    // Statements up to a {% name %} with a name in `ends` (left unconsumed) or the end of the template.
    Body parse_body(std::initializer_list<const char*> ends) {
        DepthGuard guard(*this);
        Body body;
        while (true) {
            const Token& token = current();
            if (token.type == TokenType::End) {
                if (ends.size() > 0) {
                    std::string names;
                    for (const char* end : ends) {
                        names += (names.empty() ? "'" : " or '") + std::string(end) + "'";
                    }
                    error(token.offset, "unexpected end of template, expected " + names);
                }
                return body;
            }
            if (token.type == TokenType::Text) {
                auto stmt = std::make_unique<Stmt>();
                stmt->kind = Stmt::Kind::Text;
                stmt->offset = token.offset;
                stmt->text = token.text;
                advance();
                body.push_back(std::move(stmt));
            } else if (token.type == TokenType::VariableBegin) {
                auto stmt = std::make_unique<Stmt>();
                stmt->kind = Stmt::Kind::Print;
                stmt->offset = token.offset;
                advance();
                stmt->expr = parse_tuple(true, {}, false);
                if (current().type != TokenType::VariableEnd) {
                    error(current().offset,
                          "expected end of print statement '}}', got " + describe(current()));
                }
                advance();
                body.push_back(std::move(stmt));
            } else if (token.type == TokenType::BlockBegin) {
                const Token& name = peek();
                if (name.type == TokenType::Name) {
                    for (const char* end : ends) {
                        if (name.text == end) {
                            return body;
                        }
                    }
                }
                advance();
                body.push_back(parse_statement());
            } else {
                error(token.offset, "unexpected " + describe(token));
            }
        }
    }

    // Consumes {% name %} that closes a block.
    void end_block(const char* name) {
        advance();  // {%
        if (!skip_name(name)) {
            error(current().offset, std::string("expected '") + name + "'");
        }
        expect_block_end();
    }

    StmtPtr parse_statement() {
        const Token& token = current();
        if (token.type != TokenType::Name) {
            error(token.offset, "tag name expected");
        }
        auto stmt = std::make_unique<Stmt>();
        stmt->offset = token.offset;
        const std::string name = advance().text;
        if (name == "if") {
            stmt->kind = Stmt::Kind::If;
            stmt->conditions.push_back(parse_tuple(false, {}, false));
            expect_block_end();
            while (true) {
                stmt->bodies.push_back(parse_body({"elif", "else", "endif"}));
                advance();  // {%
                const std::string tag = advance().text;
                if (tag == "elif") {
                    stmt->conditions.push_back(parse_tuple(false, {}, false));
                    expect_block_end();
                    continue;
                }
                expect_block_end();
                if (tag == "else") {
                    stmt->else_body = parse_body({"endif"});
                    end_block("endif");
                }
                break;
            }
        } else if (name == "for") {
            stmt->kind = Stmt::Kind::For;
            parse_targets(*stmt);
            if (!skip_name("in")) {
                error(current().offset, "expected 'in', got " + describe(current()));
            }
            stmt->expr = parse_tuple(false, {"recursive"}, false);
            if (is_name("recursive")) {
                error(current().offset, "recursive loops are not supported");
            }
            if (skip_name("if")) {
                stmt->condition = parse_expression(true);
            }
            expect_block_end();
            ++loop_depth_;
            stmt->body = parse_body({"endfor", "else"});
            --loop_depth_;
            if (peek().text == "else") {
                end_block("else");
                stmt->else_body = parse_body({"endfor"});
            }
            end_block("endfor");
        } else if (name == "set") {
            const size_t offset = current().offset;
            if (current().type == TokenType::Name && peek().type == TokenType::Operator &&
                peek().text == ".") {
                stmt->targets.push_back(advance().text);
                advance();
                stmt->attribute = expect_name();
            } else {
                parse_targets(*stmt);
            }
            if (skip_op("=")) {
                stmt->kind = Stmt::Kind::Set;
                stmt->expr = parse_tuple(true, {}, false);
                expect_block_end();
            } else {
                if (stmt->unpack || !stmt->attribute.empty()) {
                    error(offset, "a block set assigns one name");
                }
                stmt->kind = Stmt::Kind::SetBlock;
                if (is_op("|")) {
                    stmt->filter = parse_filters(nullptr);
                }
                expect_block_end();
                stmt->body = parse_body({"endset"});
                end_block("endset");
            }
        } else if (name == "macro") {
            stmt->kind = Stmt::Kind::Macro;
            stmt->text = expect_name();
            expect_op("(");
            while (!skip_op(")")) {
                if (!stmt->params.empty()) {
                    expect_op(",");
                    if (skip_op(")")) {
                        break;
                    }
                }
                stmt->params.push_back(expect_name());
                if (skip_op("=")) {
                    stmt->defaults.push_back(parse_expression(true));
                } else {
                    stmt->defaults.push_back(nullptr);
                }
            }
            expect_block_end();
            const int saved = loop_depth_;
            loop_depth_ = 0;
            stmt->body = parse_body({"endmacro"});
            loop_depth_ = saved;
            end_block("endmacro");
        } else if (name == "filter") {
            stmt->kind = Stmt::Kind::FilterBlock;
            stmt->filter = parse_filters(nullptr, true);
            expect_block_end();
            stmt->body = parse_body({"endfilter"});
            end_block("endfilter");
        } else if (name == "generation") {
            stmt->kind = Stmt::Kind::Scope;
            expect_block_end();
            stmt->body = parse_body({"endgeneration"});
            end_block("endgeneration");
        } else if (name == "break" || name == "continue") {
            if (loop_depth_ == 0) {
                error(stmt->offset, "'" + name + "' outside of a loop");
            }
            stmt->kind = name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
            expect_block_end();
        } else {
            error(stmt->offset, "encountered unknown tag '" + name + "'");
        }
        return stmt;
    }

    // Names assigned by for or set: "x", "a, b" or "(a, b)".
    void parse_targets(Stmt& stmt) {
        const bool paren = skip_op("(");
        while (true) {
            stmt.targets.push_back(expect_name());
            if (!skip_op(",")) {
                break;
            }
            stmt.unpack = true;
            if (current().type != TokenType::Name) {
                break;
            }
        }
        if (paren) {
            stmt.unpack = true;
            expect_op(")");
        }
    }

    bool is_tuple_end(std::initializer_list<const char*> extra) const {
        const Token& t = current();
        if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || t.type == TokenType::End ||
            (t.type == TokenType::Operator && t.text == ")")) {
            return true;
        }
        for (const char* name : extra) {
            if (t.type == TokenType::Name && t.text == name) {
                return true;
            }
        }
        return false;
    }

    ExprPtr parse_tuple(bool with_condition, std::initializer_list<const char*> extra, bool explicit_parens) {
        const size_t offset = current().offset;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) {
                expect_op(",");
            }
            if (is_tuple_end(extra)) {
                break;
            }
            items.push_back(parse_expression(with_condition));
            if (is_op(",")) {
                is_tuple = true;
            } else {
                break;
            }
        }
        if (!is_tuple) {
            if (!items.empty()) {
                return std::move(items[0]);
            }
            if (!explicit_parens) {
                error(current().offset, "expected an expression, got " + describe(current()));
            }
        }
        auto tuple = make(Expr::Kind::Tuple, offset);
        tuple->children = std::move(items);
        return tuple;
    }

    ExprPtr parse_expression(bool with_condition) {
        DepthGuard guard(*this);
        if (!with_condition) {
            return parse_or();
        }
        ExprPtr expr = parse_or();
        while (is_name("if")) {
            const size_t offset = advance().offset;
            auto cond = make(Expr::Kind::Condition, offset);
            ExprPtr test = parse_or();
            ExprPtr otherwise;
            if (skip_name("else")) {
                otherwise = parse_expression(true);
            }
            cond->children.push_back(std::move(expr));
            cond->children.push_back(std::move(test));
            cond->children.push_back(std::move(otherwise));
            expr = std::move(cond);
        }
        return expr;
    }

    ExprPtr binary(Expr::Kind kind, const std::string& op, ExprPtr left, ExprPtr right, size_t offset) {
        auto e = make(kind, offset);
        e->name = op;
        e->children.push_back(std::move(left));
        e->children.push_back(std::move(right));
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            const size_t offset = advance().offset;
            left = binary(Expr::Kind::Or, "or", std::move(left), parse_and(), offset);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            const size_t offset = advance().offset;
            left = binary(Expr::Kind::And, "and", std::move(left), parse_not(), offset);
        }
        return left;
    }

    ExprPtr parse_not() {
        DepthGuard guard(*this);
        if (is_name("not")) {
            auto e = make(Expr::Kind::Unary, advance().offset);
            e->name = "not";
            e->children.push_back(parse_not());
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const size_t offset = current().offset;
        ExprPtr first = parse_math1();
        std::vector<std::string> ops;
        std::vector<ExprPtr> operands;
        while (true) {
            const Token& t = current();
            if (t.type == TokenType::Operator && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                                  t.text == ">" || t.text == "<=" || t.text == ">=")) {
                ops.push_back(advance().text);
            } else if (is_name("in")) {
                advance();
                ops.push_back("in");
            } else if (is_name("not") && peek().type == TokenType::Name && peek().text == "in") {
                advance();
                advance();
                ops.push_back("not in");
            } else {
                break;
            }
            operands.push_back(parse_math1());
        }
        if (ops.empty()) {
            return first;
        }
        auto e = make(Expr::Kind::Compare, offset);
        e->children.push_back(std::move(first));
        for (auto& operand : operands) {
            e->children.push_back(std::move(operand));
        }
        e->ops = std::move(ops);
        return e;
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token& op = advance();
            left = binary(Expr::Kind::Binary, op.text, std::move(left), parse_concat(), op.offset);
        }
        return left;
    }

    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (is_op("~")) {
            const Token& op = advance();
            left = binary(Expr::Kind::Binary, "~", std::move(left), parse_math2(), op.offset);
        }
        return left;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token& op = advance();
            left = binary(Expr::Kind::Binary, op.text, std::move(left), parse_pow(), op.offset);
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (is_op("**")) {
            const Token& op = advance();
            left = binary(Expr::Kind::Binary, "**", std::move(left), parse_unary(true), op.offset);
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            const Token& op = advance();
            node = make(Expr::Kind::Unary, op.offset);
            node->name = op.text;
            node->children.push_back(parse_unary(false));
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) {
            node = parse_filter_expr(std::move(node));
        }
        return node;
    }

    ExprPtr parse_primary() {
        DepthGuard guard(*this);
        const Token& token = current();
        const size_t offset = token.offset;
        if (token.type == TokenType::Name) {
            const std::string name = advance().text;
            auto e = make(Expr::Kind::Literal, offset);
            if (name == "true" || name == "True") {
                e->value = Value(true);
            } else if (name == "false" || name == "False") {
                e->value = Value(false);
            } else if (name == "none" || name == "None") {
                e->value = Value(None{});
            } else {
                e->kind = Expr::Kind::Name;
                e->name = name;
            }
            return e;
        }
        if (token.type == TokenType::String) {
            std::string text;
            while (current().type == TokenType::String) {
                text += advance().text;
            }
            auto e = make(Expr::Kind::Literal, offset);
            e->value = Value(std::move(text));
            return e;
        }
        if (token.type == TokenType::Integer) {
            const std::string digits = advance().text;
            int64_t v = 0;
            const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), v);
            if (result.ec != std::errc() || result.ptr != digits.data() + digits.size()) {
                error(offset, "integer literal " + digits + " is out of range");
            }
            auto e = make(Expr::Kind::Literal, offset);
            e->value = Value(v);
            return e;
        }
        if (token.type == TokenType::Float) {
            const std::string text = advance().text;
            auto e = make(Expr::Kind::Literal, offset);
            e->value = Value(std::strtod(text.c_str(), nullptr));
            return e;
        }
        if (skip_op("(")) {
            ExprPtr e = parse_tuple(true, {}, true);
            expect_op(")");
            return e;
        }
        if (skip_op("[")) {
            auto e = make(Expr::Kind::List, offset);
            while (!skip_op("]")) {
                if (!e->children.empty()) {
                    expect_op(",");
                    if (skip_op("]")) {
                        break;
                    }
                }
                e->children.push_back(parse_expression(true));
            }
            return e;
        }
        if (skip_op("{")) {
            auto e = make(Expr::Kind::Dict, offset);
            while (!skip_op("}")) {
                if (!e->children.empty()) {
                    expect_op(",");
                    if (skip_op("}")) {
                        break;
                    }
                }
                e->children.push_back(parse_expression(true));
                expect_op(":");
                e->children.push_back(parse_expression(true));
            }
            return e;
        }
        error(offset, "unexpected " + describe(token));
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            if (is_op(".")) {
                const size_t offset = advance().offset;
                if (current().type == TokenType::Integer) {
                    auto index = make(Expr::Kind::Literal, current().offset);
                    int64_t v = 0;
                    const std::string& digits = advance().text;
                    std::from_chars(digits.data(), digits.data() + digits.size(), v);
                    index->value = Value(v);
                    auto e = make(Expr::Kind::Subscript, offset);
                    e->children.push_back(std::move(node));
                    e->children.push_back(std::move(index));
                    node = std::move(e);
                } else {
                    auto e = make(Expr::Kind::Attribute, offset);
                    e->name = expect_name();
                    e->children.push_back(std::move(node));
                    node = std::move(e);
                }
            } else if (is_op("[")) {
                const size_t offset = advance().offset;
                std::vector<ExprPtr> args;
                while (!skip_op("]")) {
                    if (!args.empty()) {
                        expect_op(",");
                        if (skip_op("]")) {
                            break;
                        }
                    }
                    args.push_back(parse_subscribed());
                }
                if (args.empty()) {
                    error(offset, "expected a subscript");
                }
                auto e = make(Expr::Kind::Subscript, offset);
                e->children.push_back(std::move(node));
                if (args.size() == 1) {
                    e->children.push_back(std::move(args[0]));
                } else {
                    auto tuple = make(Expr::Kind::Tuple, offset);
                    tuple->children = std::move(args);
                    e->children.push_back(std::move(tuple));
                }
                node = std::move(e);
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscribed() {
        const size_t offset = current().offset;
        std::vector<ExprPtr> parts;
        if (is_op(":")) {
            advance();
            parts.push_back(nullptr);
        } else {
            ExprPtr node = parse_expression(true);
            if (!is_op(":")) {
                return node;
            }
            advance();
            parts.push_back(std::move(node));
        }
        if (is_op(":") || is_op("]") || is_op(",")) {
            parts.push_back(nullptr);
        } else {
            parts.push_back(parse_expression(true));
        }
        if (skip_op(":")) {
            if (is_op("]") || is_op(",")) {
                parts.push_back(nullptr);
            } else {
                parts.push_back(parse_expression(true));
            }
        } else {
            parts.push_back(nullptr);
        }
        auto e = make(Expr::Kind::Slice, offset);
        e->children = std::move(parts);
        return e;
    }

    // (args) into e->children after what is already there, and e->keywords.
    void parse_call_args(Expr& e) {
        expect_op("(");
        bool first = true;
        while (!skip_op(")")) {
            if (!first) {
                expect_op(",");
                if (skip_op(")")) {
                    break;
                }
            }
            first = false;
            if (is_op("*") || is_op("**")) {
                error(current().offset, "argument unpacking with * or ** is not supported");
            }
            if (current().type == TokenType::Name && peek().type == TokenType::Operator &&
                peek().text == "=") {
                std::string key = advance().text;
                advance();
                e.keywords.emplace_back(std::move(key), parse_expression(true));
            } else {
                if (!e.keywords.empty()) {
                    error(current().offset, "positional argument after keyword argument");
                }
                e.children.push_back(parse_expression(true));
            }
        }
    }

    ExprPtr parse_call(ExprPtr node) {
        auto e = make(Expr::Kind::Call, current().offset);
        e->children.push_back(std::move(node));
        parse_call_args(*e);
        return e;
    }

    // "| name(args) | name ..." applied to `node` (null for {% filter %} and block set).
    ExprPtr parse_filters(ExprPtr node, bool leading_name = false) {
        bool first = true;
        while (is_op("|") || (leading_name && first)) {
            if (!(leading_name && first)) {
                advance();
            }
            first = false;
            auto e = make(Expr::Kind::Filter, current().offset);
            e->name = expect_name();
            while (is_op(".") && peek().type == TokenType::Name) {
                advance();
                e->name += "." + advance().text;
            }
            e->children.push_back(std::move(node));
            if (is_op("(")) {
                parse_call_args(*e);
            }
            node = std::move(e);
        }
        return node;
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        while (true) {
            if (is_op("|")) {
                node = parse_filters(std::move(node));
            } else if (is_name("is")) {
                advance();
                auto e = make(Expr::Kind::Test, current().offset);
                e->negated = skip_name("not");
                e->name = expect_name();
                e->children.push_back(std::move(node));
                const Token& t = current();
                if (is_op("(")) {
                    parse_call_args(*e);
                } else if ((t.type == TokenType::Name || t.type == TokenType::String ||
                            t.type == TokenType::Integer || t.type == TokenType::Float || is_op("[") ||
                            is_op("{")) &&
                           !is_name("else") && !is_name("or") && !is_name("and")) {
                    if (is_name("is")) {
                        error(t.offset, "you cannot chain multiple tests with is");
                    }
                    e->children.push_back(parse_postfix(parse_primary()));
                }
                node = std::move(e);
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    const Template& tmpl_;
    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
};

}  // namespace

std::unique_ptr<Template> parse_template(std::string_view source, std::string origin) {
    auto tmpl = std::make_unique<Template>();
    tmpl->source = normalize_source(source);
    tmpl->origin = std::move(origin);
    Parser parser(*tmpl, tokenize(tmpl->source, tmpl->origin));
    tmpl->body = parser.parse_all();
    return tmpl;
}

}  // namespace folio::jinja
