#include "engine/chat-template/jinja-interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <optional>

#include "engine/chat-template/jinja-text.h"
#include "engine/common/error.h"

namespace folio::jinja {

namespace {

enum class Flow { Normal, Break, Continue };

struct Scope {
    std::unordered_map<std::string, Value> vars;
    Scope* parent = nullptr;
};

std::string object_type_repr(const Value& v) {
    if (v.is_none()) {
        return "None";
    }
    return v.type_name() + " object";
}

}  // namespace

struct Interpreter::Impl {
    Interpreter& self;
    const Template& tmpl;
    Limits limits;
    std::string output;
    uint64_t work = 0;
    int depth = 0;
    size_t offset = 0;  // of what is being evaluated, for messages
    std::unordered_map<std::string, Value> globals;
    Scope root;

    using FilterFn = std::function<Value(Impl&, const Value&, CallArgs&)>;
    using TestFn = std::function<bool(Impl&, const Value&, CallArgs&)>;
    std::map<std::string, FilterFn, std::less<>> filters;
    std::map<std::string, TestFn, std::less<>> tests;

    Impl(Interpreter& owner, const Template& t, Limits l) : self(owner), tmpl(t), limits(l) {
        install_globals();
        install_filters();
        install_tests();
    }

    [[noreturn]] void error(const std::string& what) const {
        fail(describe_position(tmpl.source, tmpl.origin, offset), ": ", what);
    }

    void charge(uint64_t amount) {
        work += amount;
        if (work > limits.max_work) {
            error("the template does too much work (more than " + std::to_string(limits.max_work) +
                  " steps); it may loop without end");
        }
    }

    Value make_string(std::string s) {
        charge(s.size() / 16);
        if (s.size() > limits.max_output) {
            error("a string of " + std::to_string(s.size()) + " bytes exceeds the output limit");
        }
        return Value(std::move(s));
    }

    Value make_list(std::vector<Value> items, bool tuple = false) {
        charge(items.size());
        return Value::list(std::move(items), tuple);
    }

    class DepthGuard {
    public:
        explicit DepthGuard(Impl& impl) : impl_(impl) {
            if (++impl_.depth > impl_.limits.max_depth) {
                impl_.error("recursion too deep (more than " + std::to_string(impl_.limits.max_depth) +
                            " levels)");
            }
        }
        ~DepthGuard() { --impl_.depth; }
        DepthGuard(const DepthGuard&) = delete;
        DepthGuard& operator=(const DepthGuard&) = delete;

    private:
        Impl& impl_;
    };

    // ---- arguments -------------------------------------------------------------------------------------

    // The argument at `index` or named `name`, or nullopt.
    static std::optional<Value> arg(const CallArgs& args, size_t index, std::string_view name) {
        if (index < args.positional.size()) {
            return args.positional[index];
        }
        for (const auto& [key, value] : args.keyword) {
            if (key == name) {
                return value;
            }
        }
        return std::nullopt;
    }
    static Value arg_or(const CallArgs& args, size_t index, std::string_view name, Value fallback) {
        auto v = arg(args, index, name);
        return v ? *v : std::move(fallback);
    }

    std::string need_string(const Value& v, const char* what) const {
        if (!v.is_string()) {
            error(std::string(what) + " must be a string, not " + v.type_name() + " " + to_repr(v));
        }
        return v.as_string();
    }

    int64_t need_int(const Value& v, const char* what) const {
        if (v.is_int()) {
            return v.as_int();
        }
        if (v.is_bool()) {
            return v.as_bool() ? 1 : 0;
        }
        error(std::string(what) + " must be an integer, not " + v.type_name() + " " + to_repr(v));
    }

    void check_defined(const Value& v) const {
        if (v.is_undefined()) {
            error(v.as_undefined().hint);
        }
    }

    // ---- iteration, attributes, items --------------------------------------------------------------------

    std::vector<Value> iterate(const Value& v) {
        if (v.is_undefined()) {
            return {};
        }
        if (v.is_list()) {
            return v.as_list().items;
        }
        if (v.is_dict()) {
            std::vector<Value> keys;
            for (const auto& [k, value] : v.as_dict().items) {
                keys.push_back(k);
            }
            return keys;
        }
        if (v.is_string()) {
            std::vector<Value> chars;
            for (const char32_t c : utf8_decode(v.as_string())) {
                std::string s;
                utf8_append(s, c);
                chars.emplace_back(std::move(s));
            }
            charge(chars.size());
            return chars;
        }
        error("'" + v.type_name() + "' object is not iterable");
    }

    Value missing_attribute(const Value& obj, const std::string& name) const {
        return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + name + "'");
    }

    Value refuse_mutation(const Value& obj, const std::string& name) {
        const std::string kind = obj.is_dict() ? "dict" : "list";
        return Value::function(name, [kind, name](Interpreter& interp, CallArgs&) -> Value {
            interp.error("the template modifies a " + kind + " (" + name + "), which is not allowed");
        });
    }

    Value get_attribute(const Value& obj, const std::string& name) {
        check_defined(obj);
        if (obj.is_dict()) {
            if (name == "items" || name == "keys" || name == "values" || name == "get") {
                return dict_method(obj, name);
            }
            if (name == "pop" || name == "popitem" || name == "update" || name == "setdefault" ||
                name == "clear") {
                return refuse_mutation(obj, name);
            }
            if (const Value* v = obj.as_dict().find(Value(name))) {
                return *v;
            }
            return missing_attribute(obj, name);
        }
        if (obj.is_namespace()) {
            if (const Value* v = obj.as_namespace().attributes.find(Value(name))) {
                return *v;
            }
            return missing_attribute(obj, name);
        }
        if (obj.is_string()) {
            if (Value m = string_method(obj, name); !m.is_undefined()) {
                return m;
            }
        }
        if (obj.is_list()) {
            if (name == "index" || name == "count") {
                return list_method(obj, name);
            }
            if (!obj.as_list().tuple &&
                (name == "append" || name == "pop" || name == "extend" || name == "insert" ||
                 name == "remove" || name == "sort" || name == "reverse" || name == "clear")) {
                return refuse_mutation(obj, name);
            }
        }
        if (obj.is_float() && (name == "real" || name == "imag")) {
            return name == "real" ? obj : Value(0.0);
        }
        return missing_attribute(obj, name);
    }

    static int64_t normalize_index(int64_t index, size_t size) {
        return index < 0 ? index + static_cast<int64_t>(size) : index;
    }

    Value get_item(const Value& obj, const Value& key) {
        check_defined(obj);
        if (obj.is_dict()) {
            if (const Value* v = obj.as_dict().find(key)) {
                return *v;
            }
        } else if (obj.is_list() && (key.is_int() || key.is_bool())) {
            const auto& items = obj.as_list().items;
            const int64_t i = normalize_index(need_int(key, "index"), items.size());
            if (i >= 0 && static_cast<size_t>(i) < items.size()) {
                return items[static_cast<size_t>(i)];
            }
        } else if (obj.is_string() && (key.is_int() || key.is_bool())) {
            const std::u32string text = utf8_decode(obj.as_string());
            const int64_t i = normalize_index(need_int(key, "index"), text.size());
            if (i >= 0 && static_cast<size_t>(i) < text.size()) {
                std::string s;
                utf8_append(s, text[static_cast<size_t>(i)]);
                return Value(std::move(s));
            }
        } else if (obj.is_namespace() && key.is_string()) {
            return get_attribute(obj, key.as_string());
        }
        if (key.is_string()) {
            return get_attribute(obj, key.as_string());
        }
        return Value::undefined("'" + object_type_repr(obj) + "' has no element " + to_repr(key));
    }

    Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
        check_defined(obj);
        auto optional_int = [&](const Value& v) -> std::optional<int64_t> {
            if (v.is_none() || v.is_undefined()) {
                return std::nullopt;
            }
            return need_int(v, "slice index");
        };
        const int64_t step = optional_int(step_v).value_or(1);
        if (step == 0) {
            error("slice step cannot be zero");
        }
        auto pick = [&](int64_t size) {
            std::vector<int64_t> indices;
            auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
                if (!v) {
                    return fallback;
                }
                int64_t i = *v < 0 ? *v + size : *v;
                if (step > 0) {
                    return std::clamp<int64_t>(i, 0, size);
                }
                return std::clamp<int64_t>(i, -1, size - 1);
            };
            const int64_t start = clamp(optional_int(start_v), step > 0 ? 0 : size - 1);
            const int64_t stop = clamp(optional_int(stop_v), step > 0 ? size : -1);
            for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                indices.push_back(i);
            }
            charge(indices.size());
            return indices;
        };
        if (obj.is_string()) {
            const std::u32string text = utf8_decode(obj.as_string());
            std::u32string out;
            for (const int64_t i : pick(static_cast<int64_t>(text.size()))) {
                out += text[static_cast<size_t>(i)];
            }
            return Value(utf8_encode(out));
        }
        if (obj.is_list()) {
            const ListData& list = obj.as_list();
            std::vector<Value> out;
            for (const int64_t i : pick(static_cast<int64_t>(list.items.size()))) {
                out.push_back(list.items[static_cast<size_t>(i)]);
            }
            return make_list(std::move(out), list.tuple);
        }
        error("'" + obj.type_name() + "' object is not subscriptable");
    }

    // "a.b.0" as jinja2's attribute getters resolve it.
    Value resolve_path(const Value& obj, const std::string& path) {
        Value v = obj;
        size_t start = 0;
        while (true) {
            const size_t dot = path.find('.', start);
            const std::string part =
                path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            if (!part.empty() &&
                std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                part.size() < 18) {
                v = get_item(v, Value(static_cast<int64_t>(std::stoll(part))));
            } else {
                v = get_item(v, Value(part));
            }
            if (dot == std::string::npos) {
                return v;
            }
            start = dot + 1;
        }
    }

    // ---- methods
    // -------------------------------------------------------------------------------------------

    Value dict_method(const Value& obj, const std::string& name) {
        return Value::function(name, [obj, name](Interpreter& interp, CallArgs& args) -> Value {
            Impl& impl = *interp.impl_;
            const DictData& d = obj.as_dict();
            if (name == "get") {
                const auto key = arg(args, 0, "key");
                if (!key) {
                    impl.error("get() needs a key");
                }
                const Value* v = d.find(*key);
                return v != nullptr ? *v : arg_or(args, 1, "default", Value(None{}));
            }
            std::vector<Value> out;
            for (const auto& [k, v] : d.items) {
                if (name == "items") {
                    out.push_back(Value::list({k, v}, true));
                } else {
                    out.push_back(name == "keys" ? k : v);
                }
            }
            return impl.make_list(std::move(out));
        });
    }

    Value list_method(const Value& obj, const std::string& name) {
        return Value::function(name, [obj, name](Interpreter& interp, CallArgs& args) -> Value {
            Impl& impl = *interp.impl_;
            const auto& items = obj.as_list().items;
            const Value needle = arg_or(args, 0, "value", Value());
            int64_t count = 0;
            for (size_t i = 0; i < items.size(); ++i) {
                if (equal(items[i], needle)) {
                    if (name == "index") {
                        return Value(static_cast<int64_t>(i));
                    }
                    ++count;
                }
            }
            if (name == "index") {
                impl.error(to_repr(needle) + " is not in list");
            }
            return Value(count);
        });
    }

    static std::vector<std::string> split_whitespace(const std::string& s, int64_t maxsplit) {
        std::vector<std::string> parts;
        const std::u32string text = utf8_decode(s);
        size_t i = 0;
        while (i < text.size()) {
            while (i < text.size() && is_py_space(text[i])) {
                ++i;
            }
            if (i >= text.size()) {
                break;
            }
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
                size_t end = text.size();
                while (end > i && is_py_space(text[end - 1])) {
                    --end;
                }
                parts.push_back(utf8_encode(text.substr(i, end - i)));
                break;
            }
            const size_t start = i;
            while (i < text.size() && !is_py_space(text[i])) {
                ++i;
            }
            parts.push_back(utf8_encode(text.substr(start, i - start)));
        }
        return parts;
    }

    std::string format_string(const std::string& pattern, const CallArgs& args) {
        std::string out;
        size_t next_auto = 0;
        for (size_t i = 0; i < pattern.size(); ++i) {
            const char c = pattern[i];
            if (c == '{' && i + 1 < pattern.size() && pattern[i + 1] == '{') {
                out += '{';
                ++i;
            } else if (c == '}' && i + 1 < pattern.size() && pattern[i + 1] == '}') {
                out += '}';
                ++i;
            } else if (c == '{') {
                const size_t close = pattern.find('}', i);
                if (close == std::string::npos) {
                    error("single '{' encountered in format string");
                }
                const std::string field = pattern.substr(i + 1, close - i - 1);
                if (field.find_first_of(":!.[") != std::string::npos) {
                    error("format field {" + field + "} is not supported");
                }
                Value v;
                if (field.empty()) {
                    if (next_auto >= args.positional.size()) {
                        error("format(): replacement index " + std::to_string(next_auto) + " out of range");
                    }
                    v = args.positional[next_auto++];
                } else if (std::all_of(field.begin(), field.end(),
                                       [](char d) { return d >= '0' && d <= '9'; })) {
                    const size_t index = field.size() < 9 ? std::stoul(field) : args.positional.size();
                    if (index >= args.positional.size()) {
                        error("format(): replacement index " + field + " out of range");
                    }
                    v = args.positional[index];
                } else {
                    const auto found = arg(CallArgs{{}, args.keyword}, 0, field);
                    if (!found) {
                        error("format(): no argument named '" + field + "'");
                    }
                    v = *found;
                }
                out += to_str(v);
                i = close;
            } else if (c == '}') {
                error("single '}' encountered in format string");
            } else {
                out += c;
            }
        }
        return out;
    }

    // A bound method of a string, or undefined where str has no such method.
    Value string_method(const Value& obj, const std::string& name) {
        static const char* const kMethods[] = {"strip",      "lstrip",   "rstrip",  "split",   "rsplit",
                                               "startswith", "endswith", "upper",   "lower",   "title",
                                               "capitalize", "replace",  "find",    "rfind",   "index",
                                               "count",      "format",   "join",    "isdigit", "isalpha",
                                               "isspace",    "isalnum",  "isupper", "islower", "splitlines"};
        if (std::find(std::begin(kMethods), std::end(kMethods), name) == std::end(kMethods)) {
            return Value();
        }
        return Value::function(name, [obj, name](Interpreter& interp, CallArgs& args) -> Value {
            return interp.impl_->call_string_method(obj.as_string(), name, args);
        });
    }

    Value call_string_method(const std::string& s, const std::string& name, CallArgs& args) {
        if (name == "strip" || name == "lstrip" || name == "rstrip") {
            const auto chars = arg(args, 0, "chars");
            const Value* set = chars && !chars->is_none() ? &*chars : nullptr;
            if (set != nullptr) {
                need_string(*set, "strip characters");
            }
            return Value(strip(s, set, name != "rstrip", name != "lstrip"));
        }
        if (name == "upper") {
            return Value(upper(s));
        }
        if (name == "lower") {
            return Value(lower(s));
        }
        if (name == "title") {
            return Value(py_title(s));
        }
        if (name == "capitalize") {
            return Value(capitalize(s));
        }
        if (name == "split" || name == "rsplit") {
            const Value sep = arg_or(args, 0, "sep", Value(None{}));
            const int64_t maxsplit = need_int(arg_or(args, 1, "maxsplit", Value(int64_t{-1})), "maxsplit");
            std::vector<Value> out;
            if (sep.is_none()) {
                for (auto& part : split_whitespace(s, name == "split" ? maxsplit : -1)) {
                    out.emplace_back(std::move(part));
                }
                return make_list(std::move(out));
            }
            const std::string separator = need_string(sep, "separator");
            if (separator.empty()) {
                error("empty separator");
            }
            std::vector<std::string> parts;
            size_t pos = 0;
            while (true) {
                const size_t found = s.find(separator, pos);
                if (found == std::string::npos ||
                    (name == "split" && maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit)) {
                    parts.push_back(s.substr(pos));
                    break;
                }
                parts.push_back(s.substr(pos, found - pos));
                pos = found + separator.size();
            }
            if (name == "rsplit" && maxsplit >= 0 && static_cast<int64_t>(parts.size()) > maxsplit + 1) {
                const size_t keep = parts.size() - static_cast<size_t>(maxsplit);
                std::string head;
                for (size_t i = 0; i < keep; ++i) {
                    head += (i > 0 ? separator : "") + parts[i];
                }
                parts.erase(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(keep));
                parts.insert(parts.begin(), head);
            }
            for (auto& part : parts) {
                out.emplace_back(std::move(part));
            }
            return make_list(std::move(out));
        }
        if (name == "splitlines") {
            std::vector<Value> out;
            size_t pos = 0;
            while (pos < s.size()) {
                size_t end = s.find_first_of("\r\n", pos);
                if (end == std::string::npos) {
                    out.emplace_back(s.substr(pos));
                    break;
                }
                out.emplace_back(s.substr(pos, end - pos));
                pos = end + (s[end] == '\r' && end + 1 < s.size() && s[end + 1] == '\n' ? 2 : 1);
            }
            return make_list(std::move(out));
        }
        if (name == "startswith" || name == "endswith") {
            const auto prefix = arg(args, 0, "prefix");
            if (!prefix) {
                error(name + "() takes at least 1 argument");
            }
            std::vector<Value> candidates = prefix->is_list() && prefix->as_list().tuple
                                                ? prefix->as_list().items
                                                : std::vector<Value>{*prefix};
            for (const Value& c : candidates) {
                const std::string p = need_string(c, "prefix");
                if (p.size() <= s.size() &&
                    (name == "startswith" ? s.compare(0, p.size(), p) == 0
                                          : s.compare(s.size() - p.size(), p.size(), p) == 0)) {
                    return Value(true);
                }
            }
            return Value(false);
        }
        if (name == "replace") {
            const std::string old = need_string(arg_or(args, 0, "old", Value()), "replace() old");
            const std::string with = need_string(arg_or(args, 1, "new", Value()), "replace() new");
            const int64_t count = need_int(arg_or(args, 2, "count", Value(int64_t{-1})), "count");
            return make_string(replace_all(s, old, with, count));
        }
        if (name == "find" || name == "rfind" || name == "index" || name == "count") {
            const std::string needle = need_string(arg_or(args, 0, "sub", Value()), name.c_str());
            if (name == "count") {
                if (needle.empty()) {
                    return Value(static_cast<int64_t>(utf8_length(s) + 1));
                }
                int64_t n = 0;
                for (size_t pos = s.find(needle); pos != std::string::npos;
                     pos = s.find(needle, pos + needle.size())) {
                    ++n;
                }
                return Value(n);
            }
            const size_t found = name == "rfind" ? s.rfind(needle) : s.find(needle);
            if (found == std::string::npos) {
                if (name == "index") {
                    error("substring not found");
                }
                return Value(int64_t{-1});
            }
            return Value(static_cast<int64_t>(utf8_length(s.substr(0, found))));
        }
        if (name == "format") {
            return make_string(format_string(s, args));
        }
        if (name == "join") {
            const auto items = arg(args, 0, "iterable");
            if (!items) {
                error("join() takes exactly one argument");
            }
            std::string out;
            bool first = true;
            for (const Value& item : iterate(*items)) {
                if (!first) {
                    out += s;
                }
                first = false;
                out += need_string(item, "join() item");
                charge(out.size() / 64 + 1);
            }
            return make_string(std::move(out));
        }
        const std::u32string text = utf8_decode(s);
        if (text.empty()) {
            return Value(false);
        }
        auto all = [&](auto predicate) { return Value(std::all_of(text.begin(), text.end(), predicate)); };
        if (name == "isdigit") {
            return all([](char32_t c) { return c >= '0' && c <= '9'; });
        }
        if (name == "isalpha") {
            return all([](char32_t c) { return is_alpha(c); });
        }
        if (name == "isalnum") {
            return all([](char32_t c) { return is_alpha(c) || (c >= '0' && c <= '9'); });
        }
        if (name == "isspace") {
            return all([](char32_t c) { return is_py_space(c); });
        }
        if (name == "isupper" || name == "islower") {
            bool cased = false;
            for (const char32_t c : text) {
                if (c >= 'a' && c <= 'z') {
                    if (name == "isupper") {
                        return Value(false);
                    }
                    cased = true;
                } else if (c >= 'A' && c <= 'Z') {
                    if (name == "islower") {
                        return Value(false);
                    }
                    cased = true;
                }
            }
            return Value(cased);
        }
        error("str has no method '" + name + "'");
    }

    // ---- operators
    // -----------------------------------------------------------------------------------------

    static int64_t as_integer(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
    static bool is_integral(const Value& v) { return v.is_int() || v.is_bool(); }

    [[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) const {
        check_defined(a);
        check_defined(b);
        error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() +
              "'");
    }

    Value repeat(const Value& seq, int64_t n) {
        n = std::max<int64_t>(n, 0);
        if (seq.is_string()) {
            const std::string& s = seq.as_string();
            if (!s.empty() && static_cast<uint64_t>(n) > limits.max_output / s.size()) {
                error("a string of more than " + std::to_string(limits.max_output) + " bytes");
            }
            std::string out;
            for (int64_t i = 0; i < n; ++i) {
                out += s;
            }
            return make_string(std::move(out));
        }
        const ListData& list = seq.as_list();
        if (!list.items.empty() && static_cast<uint64_t>(n) > limits.max_work / list.items.size()) {
            error("a list of too many items");
        }
        std::vector<Value> out;
        charge(static_cast<uint64_t>(n) * list.items.size());
        for (int64_t i = 0; i < n; ++i) {
            out.insert(out.end(), list.items.begin(), list.items.end());
        }
        return make_list(std::move(out), list.tuple);
    }

    Value arithmetic(const std::string& op, const Value& a, const Value& b) {
        if (op == "~") {
            return make_string(to_str(a) + to_str(b));
        }
        if (a.is_number() && b.is_number()) {
            if (is_integral(a) && is_integral(b) && op != "/") {
                const int64_t x = as_integer(a);
                const int64_t y = as_integer(b);
                int64_t r = 0;
                if (op == "+" && !__builtin_add_overflow(x, y, &r)) {
                    return Value(r);
                }
                if (op == "-" && !__builtin_sub_overflow(x, y, &r)) {
                    return Value(r);
                }
                if (op == "*" && !__builtin_mul_overflow(x, y, &r)) {
                    return Value(r);
                }
                if (op == "//" || op == "%") {
                    if (y == 0) {
                        error("integer division or modulo by zero");
                    }
                    if (x == INT64_MIN && y == -1) {
                        error("integer overflow");
                    }
                    int64_t q = x / y;
                    int64_t m = x % y;
                    if (m != 0 && ((m < 0) != (y < 0))) {
                        --q;
                        m += y;
                    }
                    return Value(op == "//" ? q : m);
                }
                if (op == "**") {
                    if (y < 0) {
                        return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
                    }
                    int64_t result = 1;
                    for (int64_t i = 0; i < y; ++i) {
                        if (__builtin_mul_overflow(result, x, &result)) {
                            error("integer overflow in " + std::to_string(x) + " ** " + std::to_string(y));
                        }
                        if (result == 0 || result == 1) {
                            break;
                        }
                    }
                    return Value(result);
                }
                error("integer overflow in " + std::to_string(x) + " " + op + " " + std::to_string(y));
            }
            const double x = a.to_double();
            const double y = b.to_double();
            if (op == "+") {
                return Value(x + y);
            }
            if (op == "-") {
                return Value(x - y);
            }
            if (op == "*") {
                return Value(x * y);
            }
            if (op == "/" || op == "//" || op == "%") {
                if (y == 0) {
                    error(op == "/" ? "division by zero" : "float modulo or floor division by zero");
                }
                if (op == "/") {
                    return Value(x / y);
                }
                double m = std::fmod(x, y);
                if (m != 0 && ((m < 0) != (y < 0))) {
                    m += y;
                }
                if (op == "%") {
                    return Value(m);
                }
                return Value(std::floor((x - m) / y + 0.5) == (x - m) / y ? (x - m) / y : std::floor(x / y));
            }
            if (op == "**") {
                return Value(std::pow(x, y));
            }
        }
        if (op == "+" && a.is_string() && b.is_string()) {
            return make_string(a.as_string() + b.as_string());
        }
        if (op == "+" && a.is_list() && b.is_list() && a.as_list().tuple == b.as_list().tuple) {
            std::vector<Value> items = a.as_list().items;
            items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
            return make_list(std::move(items), a.as_list().tuple);
        }
        if (op == "*" && (a.is_string() || a.is_list()) && is_integral(b)) {
            return repeat(a, as_integer(b));
        }
        if (op == "*" && (b.is_string() || b.is_list()) && is_integral(a)) {
            return repeat(b, as_integer(a));
        }
        if (op == "%" && a.is_string()) {
            return make_string(percent_format(a.as_string(), b));
        }
        unsupported(op, a, b);
    }

    // "%s" formatting with %s, %d, %r and %%.
    std::string percent_format(const std::string& pattern, const Value& args_value) {
        std::vector<Value> args = args_value.is_list() && args_value.as_list().tuple
                                      ? args_value.as_list().items
                                      : std::vector<Value>{args_value};
        size_t next = 0;
        std::string out;
        for (size_t i = 0; i < pattern.size(); ++i) {
            if (pattern[i] != '%') {
                out += pattern[i];
                continue;
            }
            if (++i >= pattern.size()) {
                error("incomplete format");
            }
            const char spec = pattern[i];
            if (spec == '%') {
                out += '%';
                continue;
            }
            if (next >= args.size()) {
                error("not enough arguments for format string");
            }
            const Value& v = args[next++];
            if (spec == 's') {
                out += to_str(v);
            } else if (spec == 'r') {
                out += to_repr(v);
            } else if (spec == 'd' || spec == 'i') {
                if (!v.is_number()) {
                    error("%d format: a real number is required, not " + v.type_name());
                }
                out += std::to_string(v.is_float() ? static_cast<int64_t>(v.as_float()) : as_integer(v));
            } else {
                error(std::string("unsupported format character '") + spec + "'");
            }
        }
        if (next < args.size()) {
            error("not all arguments converted during string formatting");
        }
        return out;
    }

    // -1, 0, 1 as Python orders the two; an error where Python cannot.
    int compare(const Value& a, const Value& b) {
        if (a.is_number() && b.is_number()) {
            if (is_integral(a) && is_integral(b)) {
                const int64_t x = as_integer(a);
                const int64_t y = as_integer(b);
                return x < y ? -1 : x > y ? 1 : 0;
            }
            const double x = a.to_double();
            const double y = b.to_double();
            return x < y ? -1 : x > y ? 1 : 0;
        }
        if (a.is_string() && b.is_string()) {
            const int c = a.as_string().compare(b.as_string());
            return c < 0 ? -1 : c > 0 ? 1 : 0;
        }
        if (a.is_list() && b.is_list() && a.as_list().tuple == b.as_list().tuple) {
            const auto& x = a.as_list().items;
            const auto& y = b.as_list().items;
            for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
                if (!equal(x[i], y[i])) {
                    return compare(x[i], y[i]);
                }
            }
            return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
        }
        check_defined(a);
        check_defined(b);
        error("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
    }

    bool contains(const Value& container, const Value& item) {
        check_defined(container);
        if (container.is_string()) {
            if (!item.is_string()) {
                check_defined(item);
                error("'in <string>' requires string as left operand, not " + item.type_name());
            }
            return container.as_string().find(item.as_string()) != std::string::npos;
        }
        if (container.is_list()) {
            for (const Value& v : container.as_list().items) {
                if (equal(v, item)) {
                    return true;
                }
            }
            return false;
        }
        if (container.is_dict()) {
            return container.as_dict().find(item) != nullptr;
        }
        error("argument of type '" + container.type_name() + "' is not iterable");
    }

    bool compare_op(const std::string& op, const Value& a, const Value& b) {
        if (op == "==") {
            return equal(a, b);
        }
        if (op == "!=") {
            return !equal(a, b);
        }
        if (op == "in") {
            return contains(b, a);
        }
        if (op == "not in") {
            return !contains(b, a);
        }
        const int c = compare(a, b);
        if (op == "<") {
            return c < 0;
        }
        if (op == ">") {
            return c > 0;
        }
        if (op == "<=") {
            return c <= 0;
        }
        return c >= 0;
    }

    // ---- expressions
    // ---------------------------------------------------------------------------------------

    Value lookup(Scope& scope, const std::string& name) {
        for (Scope* s = &scope; s != nullptr; s = s->parent) {
            if (auto it = s->vars.find(name); it != s->vars.end()) {
                return it->second;
            }
        }
        if (auto it = globals.find(name); it != globals.end()) {
            return it->second;
        }
        return Value::undefined("'" + name + "' is undefined");
    }

    CallArgs eval_args(const Expr& e, size_t first, Scope& scope) {
        CallArgs args;
        for (size_t i = first; i < e.children.size(); ++i) {
            args.positional.push_back(eval(*e.children[i], scope));
        }
        for (const auto& [key, value] : e.keywords) {
            args.keyword.emplace_back(key, eval(*value, scope));
        }
        return args;
    }

    Value eval(const Expr& e, Scope& scope) {
        DepthGuard guard(*this);
        offset = e.offset;
        switch (e.kind) {
            case Expr::Kind::Literal:
                return e.value;
            case Expr::Kind::Name:
                return lookup(scope, e.name);
            case Expr::Kind::List:
            case Expr::Kind::Tuple: {
                std::vector<Value> items;
                for (const auto& child : e.children) {
                    items.push_back(eval(*child, scope));
                }
                return make_list(std::move(items), e.kind == Expr::Kind::Tuple);
            }
            case Expr::Kind::Dict: {
                DictData d;
                for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
                    Value key = eval(*e.children[i], scope);
                    if (key.is_list() && !key.as_list().tuple) {
                        error("unhashable type: 'list'");
                    }
                    if (key.is_dict()) {
                        error("unhashable type: 'dict'");
                    }
                    d.set(std::move(key), eval(*e.children[i + 1], scope));
                }
                charge(d.items.size());
                return Value::dict(std::move(d));
            }
            case Expr::Kind::Attribute: {
                const Value obj = eval(*e.children[0], scope);
                offset = e.offset;
                return get_attribute(obj, e.name);
            }
            case Expr::Kind::Subscript: {
                const Value obj = eval(*e.children[0], scope);
                const Expr& index = *e.children[1];
                if (index.kind == Expr::Kind::Slice) {
                    Value parts[3];
                    for (size_t i = 0; i < 3; ++i) {
                        parts[i] = index.children[i] ? eval(*index.children[i], scope) : Value(None{});
                    }
                    offset = e.offset;
                    return slice(obj, parts[0], parts[1], parts[2]);
                }
                const Value key = eval(index, scope);
                offset = e.offset;
                return get_item(obj, key);
            }
            case Expr::Kind::Slice:
                error("a slice outside of a subscript");
            case Expr::Kind::Call: {
                const Value callee = eval(*e.children[0], scope);
                CallArgs args = eval_args(e, 1, scope);
                offset = e.offset;
                return call(callee, args);
            }
            case Expr::Kind::Filter: {
                const Value input = eval(*e.children[0], scope);
                CallArgs args = eval_args(e, 1, scope);
                offset = e.offset;
                return apply_filter(e.name, input, args);
            }
            case Expr::Kind::Test: {
                const Value input = eval(*e.children[0], scope);
                CallArgs args = eval_args(e, 1, scope);
                offset = e.offset;
                return Value(apply_test(e.name, input, args) != e.negated);
            }
            case Expr::Kind::Unary: {
                const Value v = eval(*e.children[0], scope);
                if (e.name == "not") {
                    return Value(!v.truthy());
                }
                offset = e.offset;
                if (!v.is_number()) {
                    check_defined(v);
                    error("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
                }
                if (e.name == "+") {
                    return v.is_bool() ? Value(as_integer(v)) : v;
                }
                if (v.is_float()) {
                    return Value(-v.as_float());
                }
                if (as_integer(v) == INT64_MIN) {
                    error("integer overflow");
                }
                return Value(-as_integer(v));
            }
            case Expr::Kind::Binary: {
                const Value a = eval(*e.children[0], scope);
                const Value b = eval(*e.children[1], scope);
                offset = e.offset;
                return arithmetic(e.name, a, b);
            }
            case Expr::Kind::And: {
                Value a = eval(*e.children[0], scope);
                return a.truthy() ? eval(*e.children[1], scope) : a;
            }
            case Expr::Kind::Or: {
                Value a = eval(*e.children[0], scope);
                return a.truthy() ? a : eval(*e.children[1], scope);
            }
            case Expr::Kind::Compare: {
                Value left = eval(*e.children[0], scope);
                for (size_t i = 0; i < e.ops.size(); ++i) {
                    Value right = eval(*e.children[i + 1], scope);
                    offset = e.offset;
                    if (!compare_op(e.ops[i], left, right)) {
                        return Value(false);
                    }
                    left = std::move(right);
                }
                return Value(true);
            }
            case Expr::Kind::Condition: {
                if (eval(*e.children[1], scope).truthy()) {
                    return eval(*e.children[0], scope);
                }
                if (e.children[2]) {
                    return eval(*e.children[2], scope);
                }
                return Value::undefined(
                    "the inline if-expression on line evaluated to false and no else section was defined.");
            }
        }
        error("unknown expression");
    }

    Value call(const Value& callee, CallArgs& args) {
        if (callee.is_callable()) {
            DepthGuard guard(*this);
            return callee.as_callable().function(self, args);
        }
        check_defined(callee);
        error("'" + callee.type_name() + "' object is not callable");
    }

    // ---- statements
    // ----------------------------------------------------------------------------------------

    void emit(const std::string& text) {
        if (output.size() + text.size() > limits.max_output) {
            error("the output exceeds " + std::to_string(limits.max_output) + " bytes");
        }
        output += text;
    }

    void assign(Scope& scope, const Stmt& stmt, const Value& value) {
        if (!stmt.unpack) {
            scope.vars[stmt.targets[0]] = value;
            return;
        }
        std::vector<Value> items = iterate(value);
        if (items.size() != stmt.targets.size()) {
            error(items.size() > stmt.targets.size()
                      ? "too many values to unpack (expected " + std::to_string(stmt.targets.size()) + ")"
                      : "not enough values to unpack (expected " + std::to_string(stmt.targets.size()) +
                            ", got " + std::to_string(items.size()) + ")");
        }
        for (size_t i = 0; i < items.size(); ++i) {
            scope.vars[stmt.targets[i]] = items[i];
        }
    }

    std::string render_body(const Body& body, Scope& scope) {
        std::string saved;
        saved.swap(output);
        try {
            exec_body(body, scope);
        } catch (...) {
            output.swap(saved);
            throw;
        }
        output.swap(saved);
        return saved;
    }

    Flow exec_body(const Body& body, Scope& scope) {
        for (const auto& stmt : body) {
            const Flow flow = exec(*stmt, scope);
            if (flow != Flow::Normal) {
                return flow;
            }
        }
        return Flow::Normal;
    }

    Flow exec(const Stmt& stmt, Scope& scope) {
        DepthGuard guard(*this);
        offset = stmt.offset;
        switch (stmt.kind) {
            case Stmt::Kind::Text:
                emit(stmt.text);
                return Flow::Normal;
            case Stmt::Kind::Print: {
                const Value v = eval(*stmt.expr, scope);
                emit(to_str(v));
                return Flow::Normal;
            }
            case Stmt::Kind::If:
                for (size_t i = 0; i < stmt.conditions.size(); ++i) {
                    if (eval(*stmt.conditions[i], scope).truthy()) {
                        return exec_body(stmt.bodies[i], scope);
                    }
                }
                return exec_body(stmt.else_body, scope);
            case Stmt::Kind::For:
                return exec_for(stmt, scope);
            case Stmt::Kind::Set: {
                const Value v = eval(*stmt.expr, scope);
                offset = stmt.offset;
                if (!stmt.attribute.empty()) {
                    const Value target = lookup(scope, stmt.targets[0]);
                    if (!target.is_namespace()) {
                        error("cannot assign attribute on non-namespace object '" + stmt.targets[0] + "'");
                    }
                    target.as_namespace().attributes.set(Value(stmt.attribute), v);
                    return Flow::Normal;
                }
                assign(scope, stmt, v);
                return Flow::Normal;
            }
            case Stmt::Kind::SetBlock: {
                Value v(render_body(stmt.body, scope));
                if (stmt.filter) {
                    v = apply_filter_chain(*stmt.filter, v, scope);
                }
                scope.vars[stmt.targets[0]] = v;
                return Flow::Normal;
            }
            case Stmt::Kind::FilterBlock: {
                Scope inner{{}, &scope};
                const Value v = apply_filter_chain(*stmt.filter, Value(render_body(stmt.body, inner)), scope);
                emit(to_str(v));
                return Flow::Normal;
            }
            case Stmt::Kind::Scope: {
                Scope inner{{}, &scope};
                exec_body(stmt.body, inner);
                return Flow::Normal;
            }
            case Stmt::Kind::Macro:
                scope.vars[stmt.text] = make_macro(stmt);
                return Flow::Normal;
            case Stmt::Kind::Break:
                return Flow::Break;
            case Stmt::Kind::Continue:
                return Flow::Continue;
        }
        return Flow::Normal;
    }

    // A Filter chain whose innermost input is null, applied to `input`.
    Value apply_filter_chain(const Expr& filter, const Value& input, Scope& scope) {
        const Value inner =
            filter.children[0] ? apply_filter_chain(*filter.children[0], input, scope) : input;
        CallArgs args = eval_args(filter, 1, scope);
        offset = filter.offset;
        return apply_filter(filter.name, inner, args);
    }

    Value make_macro(const Stmt& stmt) {
        const Stmt* def = &stmt;
        return Value::function(stmt.text, [def](Interpreter& interp, CallArgs& args) -> Value {
            Impl& impl = *interp.impl_;
            Scope scope{{}, &impl.root};
            if (args.positional.size() > def->params.size()) {
                impl.error("macro '" + def->text + "' takes not more than " +
                           std::to_string(def->params.size()) + " argument(s)");
            }
            for (const auto& [key, value] : args.keyword) {
                if (std::find(def->params.begin(), def->params.end(), key) == def->params.end()) {
                    impl.error("macro '" + def->text + "' takes no keyword argument '" + key + "'");
                }
            }
            for (size_t i = 0; i < def->params.size(); ++i) {
                std::optional<Value> v = arg(args, i, def->params[i]);
                if (!v) {
                    v = def->defaults[i] ? impl.eval(*def->defaults[i], scope)
                                         : Value::undefined("'" + def->params[i] + "' is undefined");
                }
                scope.vars[def->params[i]] = *v;
            }
            return Value(impl.render_body(def->body, scope));
        });
    }

    Flow exec_for(const Stmt& stmt, Scope& scope) {
        const Value iterable = eval(*stmt.expr, scope);
        offset = stmt.offset;
        std::vector<Value> items = iterate(iterable);
        Scope inner{{}, &scope};
        if (stmt.condition) {
            std::vector<Value> kept;
            for (const Value& item : items) {
                charge(1);
                assign(inner, stmt, item);
                if (eval(*stmt.condition, inner).truthy()) {
                    kept.push_back(item);
                }
            }
            items = std::move(kept);
            inner.vars.clear();
        }
        if (items.empty()) {
            return exec_body(stmt.else_body, scope);
        }
        const auto length = static_cast<int64_t>(items.size());
        for (int64_t i = 0; i < length; ++i) {
            charge(10);
            const auto index = static_cast<size_t>(i);
            DictData loop;
            loop.set(Value("index"), Value(i + 1));
            loop.set(Value("index0"), Value(i));
            loop.set(Value("revindex"), Value(length - i));
            loop.set(Value("revindex0"), Value(length - i - 1));
            loop.set(Value("first"), Value(i == 0));
            loop.set(Value("last"), Value(i == length - 1));
            loop.set(Value("length"), Value(length));
            loop.set(Value("depth"), Value(int64_t{1}));
            loop.set(Value("depth0"), Value(int64_t{0}));
            loop.set(Value("previtem"),
                     i > 0 ? items[index - 1] : Value::undefined("there is no previous item"));
            loop.set(Value("nextitem"),
                     i + 1 < length ? items[index + 1] : Value::undefined("there is no next item"));
            loop.set(Value("cycle"),
                     Value::function("cycle", [i](Interpreter& interp, CallArgs& args) -> Value {
                         if (args.positional.empty()) {
                             interp.error("no items for cycling given");
                         }
                         return args.positional[static_cast<size_t>(i) % args.positional.size()];
                     }));
            // Each iteration has a scope of its own: a set inside the body does not reach the next one.
            Scope iteration{{}, &scope};
            iteration.vars["loop"] = Value::dict(std::move(loop));
            assign(iteration, stmt, items[index]);
            if (exec_body(stmt.body, iteration) == Flow::Break) {
                break;
            }
        }
        return Flow::Normal;
    }

    // ---- filters ------------------------------------------------------------------------------------------

    Value apply_filter(const std::string& name, const Value& input, CallArgs& args) {
        const auto it = filters.find(name);
        if (it == filters.end()) {
            error("no filter named '" + name + "'");
        }
        return it->second(*this, input, args);
    }

    bool apply_test(const std::string& name, const Value& input, CallArgs& args) {
        const auto it = tests.find(name);
        if (it == tests.end()) {
            error("no test named '" + name + "'");
        }
        return it->second(*this, input, args);
    }

    size_t length_of(const Value& v) const {
        if (v.is_undefined()) {
            return 0;
        }
        if (v.is_string()) {
            return utf8_length(v.as_string());
        }
        if (v.is_list()) {
            return v.as_list().items.size();
        }
        if (v.is_dict()) {
            return v.as_dict().items.size();
        }
        error("object of type '" + v.type_name() + "' has no len()");
    }

    // json.dumps(value, ensure_ascii=False, indent, separators, sort_keys).
    void to_json(const Value& v, std::string& s, const std::optional<std::string>& indent,
                 const std::string& item_sep, const std::string& key_sep, bool sort_keys, int level) {
        charge(1);
        if (level > limits.max_depth) {
            error("tojson: value nested too deeply");
        }
        if (v.is_none()) {
            s += "null";
        } else if (v.is_bool()) {
            s += v.as_bool() ? "true" : "false";
        } else if (v.is_int()) {
            s += std::to_string(v.as_int());
        } else if (v.is_float()) {
            const double d = v.as_float();
            s += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : float_repr(d);
        } else if (v.is_string()) {
            s += json_string(v.as_string());
        } else if (v.is_list() || v.is_dict()) {
            const bool is_dict = v.is_dict();
            std::vector<std::pair<Value, Value>> entries;
            if (is_dict) {
                entries = v.as_dict().items;
                if (sort_keys) {
                    std::stable_sort(entries.begin(), entries.end(), [&](const auto& a, const auto& b) {
                        return compare(a.first, b.first) < 0;
                    });
                }
            } else {
                for (const Value& item : v.as_list().items) {
                    entries.emplace_back(Value(), item);
                }
            }
            s += is_dict ? "{" : "[";
            if (entries.empty()) {
                s += is_dict ? "}" : "]";
                return;
            }
            std::string newline;
            if (indent) {
                newline = "\n";
                for (int i = 0; i <= level; ++i) {
                    newline += *indent;
                }
            }
            bool first = true;
            for (const auto& [key, value] : entries) {
                s += first ? newline : item_sep + newline;
                first = false;
                if (is_dict) {
                    if (key.is_string()) {
                        s += json_string(key.as_string());
                    } else if (key.is_none()) {
                        s += "\"null\"";
                    } else if (key.is_bool()) {
                        s += key.as_bool() ? "\"true\"" : "\"false\"";
                    } else if (key.is_int() || key.is_float()) {
                        std::string k;
                        to_json(key, k, std::nullopt, item_sep, key_sep, false, level + 1);
                        s += "\"" + k + "\"";
                    } else {
                        error("keys must be str, int, float, bool or None, not " + key.type_name());
                    }
                    s += key_sep;
                }
                to_json(value, s, indent, item_sep, key_sep, sort_keys, level + 1);
                if (s.size() > limits.max_output) {
                    error("tojson: the text exceeds the output limit");
                }
            }
            if (indent) {
                s += "\n";
                for (int i = 0; i < level; ++i) {
                    s += *indent;
                }
            }
            s += is_dict ? "}" : "]";
        } else {
            error("Object of type " + v.type_name() + " is not JSON serializable");
        }
    }

    // A key function for sort, unique, min, max: strings lower-cased unless case sensitive.
    Value sort_key(const Value& item, const std::optional<Value>& attribute, bool case_sensitive) {
        Value key = attribute && !attribute->is_none() ? resolve_path(item, to_str(*attribute)) : item;
        if (!case_sensitive && key.is_string()) {
            return Value(lower(key.as_string()));
        }
        return key;
    }

    std::vector<Value> sorted(std::vector<Value> items, const std::optional<Value>& attribute,
                              bool case_sensitive, bool reverse) {
        std::vector<std::pair<Value, Value>> keyed;
        for (Value& item : items) {
            keyed.emplace_back(sort_key(item, attribute, case_sensitive), std::move(item));
        }
        charge(keyed.size() * 8);
        std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
            return reverse ? compare(b.first, a.first) < 0 : compare(a.first, b.first) < 0;
        });
        std::vector<Value> out;
        for (auto& [key, item] : keyed) {
            out.push_back(std::move(item));
        }
        return out;
    }

    // Arguments after the test name for select/reject and selectattr/rejectattr.
    bool select_test(const Value& item, CallArgs& args, size_t first) {
        if (args.positional.size() <= first) {
            return item.truthy();
        }
        const std::string test = need_string(args.positional[first], "test name");
        CallArgs rest;
        for (size_t k = first + 1; k < args.positional.size(); ++k) {
            rest.positional.push_back(args.positional[k]);
        }
        rest.keyword = args.keyword;
        return apply_test(test, item, rest);
    }

    std::string indent_text(const std::string& s, const Value& width, bool first, bool blank) {
        const std::string indention =
            width.is_string()
                ? width.as_string()
                : std::string(
                      static_cast<size_t>(std::clamp<int64_t>(need_int(width, "indent width"), 0, 1 << 16)),
                      ' ');
        // Python's splitlines on s + "\n".
        std::vector<std::string> lines;
        const std::string text = s + "\n";
        size_t pos = 0;
        while (pos < text.size()) {
            const size_t end = text.find_first_of("\r\n", pos);
            lines.push_back(text.substr(pos, end - pos));
            pos = end + (text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n' ? 2 : 1);
        }
        std::string rv;
        if (blank) {
            for (size_t i = 0; i < lines.size(); ++i) {
                rv += (i > 0 ? "\n" + indention : "") + lines[i];
            }
        } else {
            rv = lines[0];
            for (size_t i = 1; i < lines.size(); ++i) {
                rv += "\n" + (lines[i].empty() ? "" : indention + lines[i]);
            }
        }
        if (first) {
            rv = indention + rv;
        }
        return rv;
    }

    static double round_half_even(double value, int64_t precision) {
        if (!std::isfinite(value) || precision > 300) {
            return value;
        }
        if (precision >= 0) {
            char buffer[512];
            std::snprintf(buffer, sizeof buffer, "%.*f", static_cast<int>(precision), value);
            return std::strtod(buffer, nullptr);
        }
        const double scale = std::pow(10.0, static_cast<double>(-precision));
        return std::nearbyint(value / scale) * scale;
    }

    std::string html_escape(const std::string& s) {
        std::string out;
        for (const char c : s) {
            switch (c) {
                case '&':
                    out += "&amp;";
                    break;
                case '<':
                    out += "&lt;";
                    break;
                case '>':
                    out += "&gt;";
                    break;
                case '"':
                    out += "&#34;";
                    break;
                case '\'':
                    out += "&#39;";
                    break;
                default:
                    out += c;
            }
        }
        return out;
    }

    void install_filters();
    void install_tests();
    void install_globals();
};

void Interpreter::Impl::install_filters() {
    auto& f = filters;
    f["default"] = [](Impl&, const Value& v, CallArgs& a) {
        const bool boolean = arg_or(a, 1, "boolean", Value(false)).truthy();
        if (v.is_undefined() || (boolean && !v.truthy())) {
            return arg_or(a, 0, "default_value", Value(""));
        }
        return v;
    };
    f["d"] = f["default"];
    f["length"] = [](Impl& i, const Value& v, CallArgs&) {
        return Value(static_cast<int64_t>(i.length_of(v)));
    };
    f["count"] = f["length"];
    f["trim"] = [](Impl&, const Value& v, CallArgs& a) {
        const auto chars = arg(a, 0, "chars");
        const Value* set = chars && !chars->is_none() ? &*chars : nullptr;
        return Value(strip(to_str(v), set, true, true));
    };
    f["upper"] = [](Impl&, const Value& v, CallArgs&) { return Value(upper(to_str(v))); };
    f["lower"] = [](Impl&, const Value& v, CallArgs&) { return Value(lower(to_str(v))); };
    f["title"] = [](Impl&, const Value& v, CallArgs&) { return Value(jinja_title(to_str(v))); };
    f["capitalize"] = [](Impl&, const Value& v, CallArgs&) { return Value(capitalize(to_str(v))); };
    f["replace"] = [](Impl& i, const Value& v, CallArgs& a) {
        const std::string old = to_str(arg_or(a, 0, "old", Value("")));
        const std::string with = to_str(arg_or(a, 1, "new", Value("")));
        const Value count = arg_or(a, 2, "count", Value(None{}));
        return i.make_string(
            replace_all(to_str(v), old, with, count.is_none() ? -1 : i.need_int(count, "count")));
    };
    f["join"] = [](Impl& i, const Value& v, CallArgs& a) {
        const std::string sep = to_str(arg_or(a, 0, "d", Value("")));
        const auto attribute = arg(a, 1, "attribute");
        std::string out;
        bool first = true;
        for (const Value& item : i.iterate(v)) {
            if (!first) {
                out += sep;
            }
            first = false;
            out +=
                to_str(attribute && !attribute->is_none() ? i.resolve_path(item, to_str(*attribute)) : item);
            i.charge(1);
            if (out.size() > i.limits.max_output) {
                i.error("join: the text exceeds the output limit");
            }
        }
        return i.make_string(std::move(out));
    };
    f["first"] = [](Impl& i, const Value& v, CallArgs&) {
        const std::vector<Value> items = i.iterate(v);
        return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
    };
    f["last"] = [](Impl& i, const Value& v, CallArgs&) {
        const std::vector<Value> items = i.iterate(v);
        return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
    };
    f["list"] = [](Impl& i, const Value& v, CallArgs&) { return i.make_list(i.iterate(v)); };
    f["string"] = [](Impl&, const Value& v, CallArgs&) { return Value(to_str(v)); };
    f["safe"] = [](Impl&, const Value& v, CallArgs&) { return v.is_string() ? v : Value(to_str(v)); };
    f["escape"] = [](Impl& i, const Value& v, CallArgs&) { return Value(i.html_escape(to_str(v))); };
    f["e"] = f["escape"];
    f["int"] = [](Impl& i, const Value& v, CallArgs& a) {
        const Value fallback = arg_or(a, 0, "default", Value(int64_t{0}));
        if (is_integral(v)) {
            return Value(as_integer(v));
        }
        if (v.is_float()) {
            const double d = v.as_float();
            if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) {
                return fallback;
            }
            return Value(static_cast<int64_t>(d));
        }
        if (v.is_string()) {
            const std::string s = strip(v.as_string(), nullptr, true, true);
            std::string digits;
            for (const char c : s) {
                if (c != '_') {
                    digits += c;
                }
            }
            char* end = nullptr;
            errno = 0;
            const long long n = std::strtoll(digits.c_str(), &end, 10);
            if (!digits.empty() && end == digits.c_str() + digits.size() && errno == 0 &&
                digits.find_first_of(" \t") == std::string::npos) {
                return Value(static_cast<int64_t>(n));
            }
            const Value as_float = i.apply_filter("float", v, a);
            CallArgs none;
            if (as_float.is_float() && std::isfinite(as_float.as_float()) &&
                std::fabs(as_float.as_float()) < 9.2e18 && !(as_float.as_float() == 0.0 && s.empty())) {
                // float() accepted it (float's own default never reaches here as a float parse of garbage).
                char* fend = nullptr;
                std::strtod(s.c_str(), &fend);
                if (!s.empty() && fend == s.c_str() + s.size()) {
                    return Value(static_cast<int64_t>(as_float.as_float()));
                }
            }
        }
        return fallback;
    };
    f["float"] = [](Impl&, const Value& v, CallArgs& a) {
        const Value fallback = arg_or(a, 0, "default", Value(0.0));
        if (v.is_number()) {
            return Value(v.to_double());
        }
        if (v.is_string()) {
            const std::string s = strip(v.as_string(), nullptr, true, true);
            const std::string l = lower(s);
            if (l == "inf" || l == "+inf" || l == "infinity" || l == "+infinity") {
                return Value(HUGE_VAL);
            }
            if (l == "-inf" || l == "-infinity") {
                return Value(-HUGE_VAL);
            }
            if (l == "nan" || l == "+nan" || l == "-nan") {
                return Value(std::nan(""));
            }
            if (!s.empty() && s.find_first_of("xXpP") == std::string::npos) {
                char* end = nullptr;
                const double d = std::strtod(s.c_str(), &end);
                if (end == s.c_str() + s.size()) {
                    return Value(d);
                }
            }
        }
        return fallback;
    };
    f["abs"] = [](Impl& i, const Value& v, CallArgs&) {
        if (v.is_float()) {
            return Value(std::fabs(v.as_float()));
        }
        if (is_integral(v)) {
            const int64_t n = as_integer(v);
            if (n == INT64_MIN) {
                i.error("integer overflow");
            }
            return Value(n < 0 ? -n : n);
        }
        i.check_defined(v);
        i.error("bad operand type for abs(): '" + v.type_name() + "'");
    };
    f["round"] = [](Impl& i, const Value& v, CallArgs& a) {
        const int64_t precision = i.need_int(arg_or(a, 0, "precision", Value(int64_t{0})), "precision");
        const std::string method = to_str(arg_or(a, 1, "method", Value("common")));
        if (!v.is_number()) {
            i.check_defined(v);
            i.error("round: " + v.type_name() + " is not a number");
        }
        if (method == "common") {
            if (is_integral(v) && precision >= 0) {
                return Value(as_integer(v));
            }
            return Value(round_half_even(v.to_double(), precision));
        }
        if (method != "ceil" && method != "floor") {
            i.error("method must be common, ceil or floor");
        }
        const double scale = std::pow(10.0, static_cast<double>(precision));
        const double x = v.to_double() * scale;
        return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
    };
    f["tojson"] = [](Impl& i, const Value& v, CallArgs& a) {
        const Value indent_v = arg_or(a, 1, "indent", Value(None{}));
        std::optional<std::string> indent;
        if (indent_v.is_string()) {
            indent = indent_v.as_string();
        } else if (!indent_v.is_none()) {
            indent = std::string(
                static_cast<size_t>(std::clamp<int64_t>(i.need_int(indent_v, "indent"), 0, 64)), ' ');
        }
        std::string item_sep = indent ? "," : ", ";
        std::string key_sep = ": ";
        const Value separators = arg_or(a, 2, "separators", Value(None{}));
        if (!separators.is_none()) {
            if (!separators.is_list() || separators.as_list().items.size() != 2) {
                i.error("tojson: separators must be a pair of strings");
            }
            item_sep = i.need_string(separators.as_list().items[0], "separator");
            key_sep = i.need_string(separators.as_list().items[1], "separator");
        }
        const bool sort_keys = arg_or(a, 3, "sort_keys", Value(false)).truthy();
        std::string s;
        i.to_json(v, s, indent, item_sep, key_sep, sort_keys, 0);
        return i.make_string(std::move(s));
    };
    f["items"] = [](Impl& i, const Value& v, CallArgs&) {
        if (v.is_undefined()) {
            return i.make_list({});
        }
        if (!v.is_dict()) {
            i.error("items: can only get item pairs from a mapping, not " + v.type_name());
        }
        std::vector<Value> out;
        for (const auto& [k, value] : v.as_dict().items) {
            out.push_back(Value::list({k, value}, true));
        }
        return i.make_list(std::move(out));
    };
    f["dictsort"] = [](Impl& i, const Value& v, CallArgs& a) {
        if (!v.is_dict()) {
            i.error("dictsort: " + v.type_name() + " is not a mapping");
        }
        const bool case_sensitive = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
        const std::string by = to_str(arg_or(a, 1, "by", Value("key")));
        const bool reverse = arg_or(a, 2, "reverse", Value(false)).truthy();
        if (by != "key" && by != "value") {
            i.error("You can only sort by either \"key\" or \"value\"");
        }
        std::vector<Value> pairs;
        for (const auto& [k, value] : v.as_dict().items) {
            pairs.push_back(Value::list({k, value}, true));
        }
        return i.make_list(
            i.sorted(std::move(pairs), Value(by == "key" ? "0" : "1"), case_sensitive, reverse));
    };
    f["sort"] = [](Impl& i, const Value& v, CallArgs& a) {
        const bool reverse = arg_or(a, 0, "reverse", Value(false)).truthy();
        const bool case_sensitive = arg_or(a, 1, "case_sensitive", Value(false)).truthy();
        return i.make_list(i.sorted(i.iterate(v), arg(a, 2, "attribute"), case_sensitive, reverse));
    };
    f["unique"] = [](Impl& i, const Value& v, CallArgs& a) {
        const bool case_sensitive = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
        const auto attribute = arg(a, 1, "attribute");
        std::vector<Value> seen;
        std::vector<Value> out;
        for (const Value& item : i.iterate(v)) {
            Value key = i.sort_key(item, attribute, case_sensitive);
            i.charge(seen.size() + 1);
            if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, key); })) {
                seen.push_back(std::move(key));
                out.push_back(item);
            }
        }
        return i.make_list(std::move(out));
    };
    f["reverse"] = [](Impl& i, const Value& v, CallArgs&) {
        if (v.is_string()) {
            std::u32string text = utf8_decode(v.as_string());
            std::reverse(text.begin(), text.end());
            return Value(utf8_encode(text));
        }
        std::vector<Value> items = i.iterate(v);
        std::reverse(items.begin(), items.end());
        return i.make_list(std::move(items));
    };
    f["map"] = [](Impl& i, const Value& v, CallArgs& a) {
        std::vector<Value> out;
        const auto attribute = arg(CallArgs{{}, a.keyword}, 0, "attribute");
        for (const Value& item : i.iterate(v)) {
            if (attribute) {
                Value x = i.resolve_path(item, to_str(*attribute));
                if (x.is_undefined()) {
                    if (const auto d = arg(CallArgs{{}, a.keyword}, 0, "default")) {
                        x = *d;
                    }
                }
                out.push_back(std::move(x));
            } else {
                if (a.positional.empty()) {
                    i.error("map requires a filter argument");
                }
                CallArgs rest;
                for (size_t k = 1; k < a.positional.size(); ++k) {
                    rest.positional.push_back(a.positional[k]);
                }
                rest.keyword = a.keyword;
                out.push_back(i.apply_filter(i.need_string(a.positional[0], "filter name"), item, rest));
            }
        }
        return i.make_list(std::move(out));
    };
    auto select = [](bool keep, bool by_attribute) {
        return [keep, by_attribute](Impl& i, const Value& v, CallArgs& a) {
            std::vector<Value> out;
            for (const Value& item : i.iterate(v)) {
                bool pass = false;
                if (by_attribute) {
                    if (a.positional.empty()) {
                        i.error("selectattr needs an attribute name");
                    }
                    pass = i.select_test(i.resolve_path(item, to_str(a.positional[0])), a, 1);
                } else {
                    pass = i.select_test(item, a, 0);
                }
                if (pass == keep) {
                    out.push_back(item);
                }
            }
            return i.make_list(std::move(out));
        };
    };
    f["select"] = select(true, false);
    f["reject"] = select(false, false);
    f["selectattr"] = select(true, true);
    f["rejectattr"] = select(false, true);
    f["batch"] = [](Impl& i, const Value& v, CallArgs& a) {
        const int64_t size = i.need_int(arg_or(a, 0, "linecount", Value()), "linecount");
        if (size <= 0) {
            i.error("batch: linecount must be positive");
        }
        const auto fill = arg(a, 1, "fill_with");
        std::vector<Value> out;
        std::vector<Value> row;
        for (const Value& item : i.iterate(v)) {
            row.push_back(item);
            if (static_cast<int64_t>(row.size()) == size) {
                out.push_back(i.make_list(std::move(row)));
                row.clear();
            }
        }
        if (!row.empty()) {
            while (fill && !fill->is_none() && static_cast<int64_t>(row.size()) < size) {
                row.push_back(*fill);
            }
            out.push_back(i.make_list(std::move(row)));
        }
        return i.make_list(std::move(out));
    };
    f["indent"] = [](Impl& i, const Value& v, CallArgs& a) {
        return i.make_string(i.indent_text(to_str(v), arg_or(a, 0, "width", Value(int64_t{4})),
                                           arg_or(a, 1, "first", Value(false)).truthy(),
                                           arg_or(a, 2, "blank", Value(false)).truthy()));
    };
    f["wordcount"] = [](Impl&, const Value& v, CallArgs&) {
        // Words as jinja2 counts them: runs of word characters.
        int64_t n = 0;
        bool in_word = false;
        for (const char32_t c : utf8_decode(to_str(v))) {
            const bool word = is_alpha(c) || (c >= '0' && c <= '9') || c == '_';
            n += word && !in_word ? 1 : 0;
            in_word = word;
        }
        return Value(n);
    };
    f["center"] = [](Impl& i, const Value& v, CallArgs& a) {
        const std::string s = to_str(v);
        const int64_t width =
            std::min<int64_t>(i.need_int(arg_or(a, 0, "width", Value(int64_t{80})), "width"), 1 << 20);
        const auto length = static_cast<int64_t>(utf8_length(s));
        if (width <= length) {
            return Value(s);
        }
        const int64_t pad = width - length;
        const int64_t left = pad / 2 + (pad & width & 1);
        return i.make_string(std::string(static_cast<size_t>(left), ' ') + s +
                             std::string(static_cast<size_t>(pad - left), ' '));
    };
    auto extreme = [](bool want_max) {
        return [want_max](Impl& i, const Value& v, CallArgs& a) {
            const bool case_sensitive = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
            const auto attribute = arg(a, 1, "attribute");
            std::optional<Value> best;
            Value best_key;
            for (const Value& item : i.iterate(v)) {
                Value key = i.sort_key(item, attribute, case_sensitive);
                if (!best || (want_max ? i.compare(key, best_key) > 0 : i.compare(key, best_key) < 0)) {
                    best = item;
                    best_key = std::move(key);
                }
            }
            return best ? *best : Value::undefined(std::string("No aggregated item, sequence was empty."));
        };
    };
    f["min"] = extreme(false);
    f["max"] = extreme(true);
    f["sum"] = [](Impl& i, const Value& v, CallArgs& a) {
        const auto attribute = arg(a, 0, "attribute");
        Value total = arg_or(a, 1, "start", Value(int64_t{0}));
        for (const Value& item : i.iterate(v)) {
            total = i.arithmetic(
                "+", total,
                attribute && !attribute->is_none() ? i.resolve_path(item, to_str(*attribute)) : item);
        }
        return total;
    };
    f["attr"] = [](Impl& i, const Value& v, CallArgs& a) {
        return i.get_attribute(v, to_str(arg_or(a, 0, "name", Value(""))));
    };
    f["format"] = [](Impl& i, const Value& v, CallArgs& a) {
        return i.make_string(i.percent_format(to_str(v), Value::list(a.positional, true)));
    };
}

void Interpreter::Impl::install_tests() {
    auto& t = tests;
    t["defined"] = [](Impl&, const Value& v, CallArgs&) { return !v.is_undefined(); };
    t["undefined"] = [](Impl&, const Value& v, CallArgs&) { return v.is_undefined(); };
    t["none"] = [](Impl&, const Value& v, CallArgs&) { return v.is_none(); };
    t["string"] = [](Impl&, const Value& v, CallArgs&) { return v.is_string(); };
    t["number"] = [](Impl&, const Value& v, CallArgs&) { return v.is_number(); };
    t["integer"] = [](Impl&, const Value& v, CallArgs&) { return v.is_int(); };
    t["float"] = [](Impl&, const Value& v, CallArgs&) { return v.is_float(); };
    t["boolean"] = [](Impl&, const Value& v, CallArgs&) { return v.is_bool(); };
    t["mapping"] = [](Impl&, const Value& v, CallArgs&) { return v.is_dict(); };
    t["iterable"] = [](Impl&, const Value& v, CallArgs&) {
        return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
    };
    t["sequence"] = [](Impl&, const Value& v, CallArgs&) {
        return v.is_list() || v.is_dict() || v.is_string();
    };
    t["callable"] = [](Impl&, const Value& v, CallArgs&) { return v.is_callable(); };
    t["true"] = [](Impl&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); };
    t["false"] = [](Impl&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); };
    t["odd"] = [](Impl& i, const Value& v, CallArgs&) {
        const int64_t n = i.need_int(v, "odd");
        return n % 2 != 0;
    };
    t["even"] = [](Impl& i, const Value& v, CallArgs&) { return i.need_int(v, "even") % 2 == 0; };
    t["divisibleby"] = [](Impl& i, const Value& v, CallArgs& a) {
        const int64_t d = i.need_int(arg_or(a, 0, "num", Value()), "divisor");
        if (d == 0) {
            i.error("integer division or modulo by zero");
        }
        return i.arithmetic("%", v, Value(d)).truthy() == false;
    };
    auto comparison = [](const char* op) {
        return [op](Impl& i, const Value& v, CallArgs& a) {
            return i.compare_op(op, v, arg_or(a, 0, "other", Value()));
        };
    };
    t["eq"] = t["equalto"] = t["=="] = comparison("==");
    t["ne"] = t["!="] = comparison("!=");
    t["lt"] = t["lessthan"] = t["<"] = comparison("<");
    t["gt"] = t["greaterthan"] = t[">"] = comparison(">");
    t["le"] = t["<="] = comparison("<=");
    t["ge"] = t[">="] = comparison(">=");
    t["in"] = [](Impl& i, const Value& v, CallArgs& a) {
        return i.contains(arg_or(a, 0, "seq", Value()), v);
    };
    t["sameas"] = [](Impl&, const Value& v, CallArgs& a) {
        const Value other = arg_or(a, 0, "other", Value());
        if (v.is_none() || v.is_bool() || v.is_undefined()) {
            return equal(v, other) && v.is_bool() == other.is_bool() && v.is_none() == other.is_none();
        }
        return false;
    };
    t["lower"] = [](Impl&, const Value& v, CallArgs&) {
        return v.is_string() && lower(v.as_string()) == v.as_string();
    };
    t["upper"] = [](Impl&, const Value& v, CallArgs&) {
        return v.is_string() && upper(v.as_string()) == v.as_string();
    };
    t["escaped"] = [](Impl&, const Value&, CallArgs&) { return false; };
    t["filter"] = [](Impl& i, const Value& v, CallArgs&) {
        return v.is_string() && i.filters.count(v.as_string()) > 0;
    };
    t["test"] = [](Impl& i, const Value& v, CallArgs&) {
        return v.is_string() && i.tests.count(v.as_string()) > 0;
    };
}

void Interpreter::Impl::install_globals() {
    globals["range"] = Value::function("range", [](Interpreter& interp, CallArgs& args) -> Value {
        Impl& i = *interp.impl_;
        if (args.positional.empty() || args.positional.size() > 3) {
            i.error("range expected 1 to 3 arguments, got " + std::to_string(args.positional.size()));
        }
        int64_t start = 0;
        int64_t stop = 0;
        int64_t step = 1;
        if (args.positional.size() == 1) {
            stop = i.need_int(args.positional[0], "range() argument");
        } else {
            start = i.need_int(args.positional[0], "range() argument");
            stop = i.need_int(args.positional[1], "range() argument");
            if (args.positional.size() == 3) {
                step = i.need_int(args.positional[2], "range() argument");
            }
        }
        if (step == 0) {
            i.error("range() arg 3 must not be zero");
        }
        // The sandbox's bound on range(), as jinja2's MAX_RANGE.
        constexpr int64_t kMaxRange = 100000;
        const long double count = step > 0 ? (static_cast<long double>(stop) - start + step - 1) / step
                                           : (static_cast<long double>(start) - stop - step - 1) / -step;
        if (count > kMaxRange) {
            i.error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        }
        std::vector<Value> out;
        for (int64_t v = start; step > 0 ? v < stop : v > stop; v += step) {
            out.emplace_back(v);
        }
        return i.make_list(std::move(out));
    });
    globals["namespace"] = Value::function("namespace", [](Interpreter& interp, CallArgs& args) -> Value {
        auto ns = std::make_shared<NamespaceData>();
        for (const Value& v : args.positional) {
            if (!v.is_dict()) {
                interp.error("namespace() takes keyword arguments or a mapping");
            }
            for (const auto& [k, value] : v.as_dict().items) {
                ns->attributes.set(k, value);
            }
        }
        for (const auto& [k, value] : args.keyword) {
            ns->attributes.set(Value(k), value);
        }
        return Value(std::move(ns));
    });
    globals["dict"] = Value::function("dict", [](Interpreter& interp, CallArgs& args) -> Value {
        DictData d;
        for (const Value& v : args.positional) {
            if (!v.is_dict()) {
                interp.error("dict() takes keyword arguments or a mapping");
            }
            for (const auto& [k, value] : v.as_dict().items) {
                d.set(k, value);
            }
        }
        for (const auto& [k, value] : args.keyword) {
            d.set(Value(k), value);
        }
        return Value::dict(std::move(d));
    });
    globals["raise_exception"] =
        Value::function("raise_exception", [](Interpreter& interp, CallArgs& args) -> Value {
            interp.error("the template raised an error: " + to_str(arg_or(args, 0, "message", Value(""))));
        });
    globals["strftime_now"] =
        Value::function("strftime_now", [](Interpreter& interp, CallArgs& args) -> Value {
            const std::string format =
                interp.impl_->need_string(arg_or(args, 0, "format", Value()), "format");
            const std::time_t now = std::time(nullptr);
            std::tm local{};
            localtime_r(&now, &local);
            char buffer[512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            const size_t n =
                format.size() < 200 ? std::strftime(buffer, sizeof buffer, format.c_str(), &local) : 0;
#pragma GCC diagnostic pop
            return Value(std::string(buffer, n));
        });
}

Interpreter::Interpreter(const Template& tmpl, Limits limits)
    : impl_(std::make_unique<Impl>(*this, tmpl, limits)) {}

Interpreter::~Interpreter() = default;

std::string Interpreter::render(const DictData& context) {
    for (const auto& [k, v] : context.items) {
        if (k.is_string()) {
            impl_->root.vars[k.as_string()] = v;
        }
    }
    impl_->output.clear();
    impl_->exec_body(impl_->tmpl.body, impl_->root);
    return std::move(impl_->output);
}

void Interpreter::error(const std::string& what) const {
    impl_->error(what);
}

void Interpreter::charge(uint64_t amount) {
    impl_->charge(amount);
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
    return impl_->call(callee, args);
}

}  // namespace folio::jinja
