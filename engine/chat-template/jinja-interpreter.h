// Renders a parsed template: statements, expressions, and the filters, tests, methods and globals of
// jinja2 that chat templates use, with the semantics of transformers' sandboxed environment. Templates are
// untrusted, so recursion depth, loop work and output size are bounded; every failure is folio::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "engine/chat-template/jinja-parser.h"
#include "engine/chat-template/jinja-value.h"

namespace folio::jinja {

struct Limits {
    size_t max_output = size_t{16} << 20;  // bytes of rendered text
    uint64_t max_work = 20'000'000;  // loop iterations (10 each) plus bytes and items built along the way
    int max_depth = 200;             // nested evaluation (statements, expressions, macro calls)
};

class Interpreter {
public:
    Interpreter(const Template& tmpl, Limits limits);
    ~Interpreter();
    Interpreter(const Interpreter&) = delete;
    Interpreter& operator=(const Interpreter&) = delete;

    // Renders with `context` as the template's variables (they shadow the globals).
    std::string render(const DictData& context);

    // For the natives: an error at the statement or expression being evaluated.
    [[noreturn]] void error(const std::string& what) const;
    // Accounts work (iterations, bytes, items built) against the limit.
    void charge(uint64_t amount);
    Value call(const Value& callee, CallArgs& args);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace folio::jinja
