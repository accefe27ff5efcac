// The syntax tree of a template and the parser that builds it from tokens, following jinja2's grammar
// and operator precedence.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat-template/jinja-lexer.h"
#include "engine/chat-template/jinja-value.h"

namespace folio::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,    // value
        Name,       // name
        List,       // children
        Tuple,      // children
        Dict,       // children: key, value, key, value...
        Attribute,  // children[0].name
        Subscript,  // children[0][children[1]]
        Slice,      // children: start, stop, step (null where absent)
        Call,       // children[0](children[1..], keywords)
        Filter,     // children[0] | name(children[1..], keywords)
        Test,       // children[0] is name(children[1..], keywords); negated
        Unary,      // name: "-", "+", "not"
        Binary,     // name: operator; children[0], children[1]
        And,
        Or,
        Compare,    // children[0] ops[i] children[i + 1]
        Condition,  // children: body, test, else (null where absent)
    };
    Kind kind;
    size_t offset = 0;
    Value value;
    std::string name;
    bool negated = false;
    std::vector<ExprPtr> children;
    std::vector<std::pair<std::string, ExprPtr>> keywords;
    std::vector<std::string> ops;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    enum class Kind {
        Text,         // text
        Print,        // expr
        If,           // conditions[i] -> bodies[i]; else_body
        For,          // targets in expr [if condition]: body, else_body
        Set,          // targets (or attribute of namespace `targets[0]`) = expr
        SetBlock,     // targets[0] = rendered body (filtered through `filter` if present)
        Macro,        // name(params = defaults): body
        FilterBlock,  // filter (a Filter expr whose children[0] is null) applied to rendered body
        Scope,        // body rendered in a scope of its own ({% generation %})
        Break,
        Continue,
    };
    Kind kind;
    size_t offset = 0;
    std::string text;
    std::string attribute;  // Set on a namespace attribute: targets[0].attribute
    ExprPtr expr;
    ExprPtr condition;
    ExprPtr filter;
    std::vector<std::string> targets;
    bool unpack = false;  // targets written as a tuple
    std::vector<ExprPtr> conditions;
    std::vector<Body> bodies;
    Body body;
    Body else_body;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // per param, null where none
};

struct Template {
    std::string source;  // normalized
    std::string origin;
    Body body;
};

// Parses a template. Throws folio::Error naming `origin`, line and column.
std::unique_ptr<Template> parse_template(std::string_view source, std::string origin);

}  // namespace folio::jinja
