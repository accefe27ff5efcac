// The values a chat template computes with, modelled on the Python objects jinja2 hands templates:
// undefined, None, bool, int, float, str (UTF-8), list/tuple, dict (insertion order), callables and
// namespace() objects. Lists and dicts are immutable once built (the sandbox refuses mutation), so they
// are shared; a namespace is the one mutable object.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace folio::jinja {

class Value;
class Interpreter;

// An undefined value; `hint` is the message jinja2 gives when it is used where that is an error.
struct Undefined {
    std::string hint;
};
struct None {};

struct ListData {
    std::vector<Value> items;
    bool tuple = false;
};

// Keys in insertion order; lookup is linear, which suits the small dicts of chat messages.
struct DictData {
    std::vector<std::pair<Value, Value>> items;
    const Value* find(const Value& key) const;
    void set(Value key, Value value);
};

// Arguments of a call as the template wrote them.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

using NativeFunction = std::function<Value(Interpreter&, CallArgs&)>;

struct Callable {
    std::string name;
    NativeFunction function;
};

// namespace(): attributes assignable with {% set ns.attr = ... %}.
struct NamespaceData {
    DictData attributes;
};

class Value {
public:
    using Storage = std::variant<Undefined, None, bool, int64_t, double, std::string,
                                 std::shared_ptr<const ListData>, std::shared_ptr<const DictData>,
                                 std::shared_ptr<const Callable>, std::shared_ptr<NamespaceData>>;

    Value() : storage_(Undefined{}) {}
    Value(None) : storage_(None{}) {}
    Value(Undefined u) : storage_(std::move(u)) {}
    Value(bool b) : storage_(b) {}
    Value(int i) : storage_(static_cast<int64_t>(i)) {}
    Value(int64_t i) : storage_(i) {}
    Value(double d) : storage_(d) {}
    Value(std::string s) : storage_(std::move(s)) {}
    Value(const char* s) : storage_(std::string(s)) {}
    Value(std::shared_ptr<const ListData> l) : storage_(std::move(l)) {}
    Value(std::shared_ptr<const DictData> d) : storage_(std::move(d)) {}
    Value(std::shared_ptr<const Callable> c) : storage_(std::move(c)) {}
    Value(std::shared_ptr<NamespaceData> n) : storage_(std::move(n)) {}

    static Value list(std::vector<Value> items, bool tuple = false);
    static Value dict(DictData data);
    static Value function(std::string name, NativeFunction function);
    static Value undefined(std::string hint) { return Value(Undefined{std::move(hint)}); }

    bool is_undefined() const { return std::holds_alternative<Undefined>(storage_); }
    bool is_none() const { return std::holds_alternative<None>(storage_); }
    bool is_bool() const { return std::holds_alternative<bool>(storage_); }
    bool is_int() const { return std::holds_alternative<int64_t>(storage_); }
    bool is_float() const { return std::holds_alternative<double>(storage_); }
    // int, float or bool, as Python's numbers.Number.
    bool is_number() const { return is_int() || is_float() || is_bool(); }
    bool is_string() const { return std::holds_alternative<std::string>(storage_); }
    bool is_list() const { return std::holds_alternative<std::shared_ptr<const ListData>>(storage_); }
    bool is_dict() const { return std::holds_alternative<std::shared_ptr<const DictData>>(storage_); }
    bool is_callable() const { return std::holds_alternative<std::shared_ptr<const Callable>>(storage_); }
    bool is_namespace() const { return std::holds_alternative<std::shared_ptr<NamespaceData>>(storage_); }

    bool as_bool() const { return std::get<bool>(storage_); }
    int64_t as_int() const { return std::get<int64_t>(storage_); }
    double as_float() const { return std::get<double>(storage_); }
    // An int, float or bool as a double.
    double to_double() const;
    const std::string& as_string() const { return std::get<std::string>(storage_); }
    const ListData& as_list() const { return *std::get<std::shared_ptr<const ListData>>(storage_); }
    const DictData& as_dict() const { return *std::get<std::shared_ptr<const DictData>>(storage_); }
    const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(storage_); }
    NamespaceData& as_namespace() const { return *std::get<std::shared_ptr<NamespaceData>>(storage_); }
    const Undefined& as_undefined() const { return std::get<Undefined>(storage_); }

    // Python's truth value.
    bool truthy() const;
    // Python's type name, as jinja2's messages show it ("dict object").
    std::string type_name() const;

private:
    Storage storage_;
};

// Python's == (1 == 1.0 == True; two undefined values are equal as jinja2's Undefined are).
bool equal(const Value& a, const Value& b);

// str(value) as jinja2 prints it: None, True, 1.0, ['a', 1], {'a': 1}; undefined prints as "".
std::string to_str(const Value& value);
// repr(value) as Python writes it.
std::string to_repr(const Value& value);
// Python's repr of a float: shortest round trip, "1.0", "1e+20", "inf".
std::string float_repr(double value);

// UTF-8 helpers: strings are indexed and measured in code points as Python does.
std::u32string utf8_decode(const std::string& text);
std::string utf8_encode(const std::u32string& text);
void utf8_append(std::string& out, char32_t code_point);
size_t utf8_length(const std::string& text);

}  // namespace folio::jinja
