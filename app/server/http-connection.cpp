#include "app/server/http-connection.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

namespace folio::server {

namespace {

using Clock = std::chrono::steady_clock;

// How often a wait looks whether the server is stopping.
constexpr auto kStopPoll = std::chrono::milliseconds(50);
// What is read from the socket at a time.
constexpr size_t kReadChunk = 16 * 1024;
// After a response that leaves a body unread, what the client still sends is read and dropped for this long
// (and at most this much) before the socket closes, so that the close does not reset the connection before
// the client has read the response. A client that does not wait for 100 Continue sends its whole body first,
// so the bound is well above the bodies that clients send whole.
constexpr auto kLingerTime = std::chrono::milliseconds(5000);
constexpr size_t kLingerBytes = size_t{64} << 20;

thread_local Connection* t_connection = nullptr;
// Set while the accepting thread serves a connection beyond the pool: it is answered 429 and closed.
thread_local bool t_refuse = false;
// The request line and status of the response httplib last wrote on this thread.
thread_local RequestLogEntry t_logged;

// httplib's task queue for connections: threads started as connections need them, up to max_threads, and up
// to max_pending accepted connections waiting for one; a connection beyond those is served at once on the
// accepting thread with t_refuse set.
class ConnectionPool final : public httplib::TaskQueue {
public:
    ConnectionPool(size_t max_threads, size_t max_pending)
        : max_threads_(max_threads), max_pending_(max_pending) {}
    ~ConnectionPool() override { shutdown(); }
    ConnectionPool(const ConnectionPool&) = delete;
    ConnectionPool& operator=(const ConnectionPool&) = delete;

    void enqueue(std::function<void()> fn) override {
        {
            const std::lock_guard lock(mutex_);
            const bool room = threads_.size() < max_threads_ || queue_.size() < n_idle_ + max_pending_;
            if (!stopping_ && room) {
                queue_.push_back(std::move(fn));
                if (queue_.size() > n_idle_ && threads_.size() < max_threads_) {
                    threads_.emplace_back([this] { work(); });
                } else {
                    ready_.notify_one();
                }
                return;
            }
        }
        t_refuse = true;
        fn();
        t_refuse = false;
    }

    void shutdown() override {
        std::vector<std::thread> threads;
        {
            const std::lock_guard lock(mutex_);
            stopping_ = true;
            ready_.notify_all();
            threads.swap(threads_);
        }
        for (std::thread& t : threads) {
            if (t.joinable()) {
                t.join();
            }
        }
    }

private:
    void work() {
        std::unique_lock lock(mutex_);
        for (;;) {
            ++n_idle_;
            ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            --n_idle_;
            if (queue_.empty()) {
                return;
            }
            std::function<void()> fn = std::move(queue_.front());
            queue_.pop_front();
            lock.unlock();
            fn();
            lock.lock();
        }
    }

    const size_t max_threads_;
    const size_t max_pending_;
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> queue_;
    size_t n_idle_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

// What the head of a request says of its body, or why it is refused before the body is read.
struct Framing {
    std::string method;
    std::string path;
    bool has_body = false;
    int status = 0;  // 0: acceptable
    std::string message;
    std::string code;
};

Framing check_framing(std::string_view head, size_t max_body_bytes) {
    Framing f;
    const size_t line_end = head.find("\r\n");
    const std::string_view request_line = head.substr(0, line_end);
    const size_t sp1 = request_line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
    if (sp1 != std::string_view::npos) {
        f.method = std::string(request_line.substr(0, sp1));
        f.path =
            std::string(request_line.substr(sp1 + 1, sp2 == std::string_view::npos ? sp2 : sp2 - sp1 - 1));
        f.path = f.path.substr(0, f.path.find('?'));
    }
    int n_lengths = 0;
    std::optional<uint64_t> length;
    bool bad_length = false;
    bool chunked = false;
    std::string transfer_encoding;
    size_t at = line_end == std::string_view::npos ? head.size() : line_end + 2;
    while (at < head.size()) {
        size_t end = head.find("\r\n", at);
        if (end == std::string_view::npos) {
            end = head.size();
        }
        const std::string_view line = head.substr(at, end - at);
        at = end + 2;
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) {
            continue;
        }
        const std::string_view name = line.substr(0, colon);
        const std::string_view value = trim(line.substr(colon + 1));
        if (iequals(name, "Content-Length")) {
            ++n_lengths;
            uint64_t n = 0;
            const auto [end_of_number, error] = std::from_chars(value.data(), value.data() + value.size(), n);
            if (value.empty() || error != std::errc() || end_of_number != value.data() + value.size()) {
                bad_length = true;
            } else {
                length = n;
            }
        } else if (iequals(name, "Transfer-Encoding")) {
            if (!transfer_encoding.empty()) {
                transfer_encoding.push_back(',');
            }
            transfer_encoding.append(value);
            const size_t comma = value.rfind(',');
            chunked = iequals(trim(value.substr(comma == std::string_view::npos ? 0 : comma + 1)), "chunked");
        }
    }
    const auto refuse = [&](int status, std::string message, const char* code = "") {
        f.status = status;
        f.message = std::move(message);
        f.code = code;
        return f;
    };
    if (bad_length) {
        return refuse(400, "the Content-Length header is not a byte count");
    }
    if (n_lengths > 1) {
        return refuse(400, "the request has more than one Content-Length header");
    }
    if (!transfer_encoding.empty() && n_lengths > 0) {
        return refuse(400, "the request has both Transfer-Encoding and Content-Length");
    }
    if (!transfer_encoding.empty() && !iequals(trim(transfer_encoding), "chunked")) {
        return refuse(chunked ? 400 : 501, "only Transfer-Encoding: chunked is supported");
    }
    if (length && *length > max_body_bytes) {
        return refuse(413,
                      "the request body of " + std::to_string(*length) + " bytes is larger than the " +
                          std::to_string(max_body_bytes) + " bytes the server takes (--max-body-size)",
                      "body_too_large");
    }
    const bool body_method = f.method == "POST" || f.method == "PUT" || f.method == "PATCH";
    if (body_method && !length && !chunked) {
        return refuse(411, "the request needs a Content-Length or Transfer-Encoding: chunked");
    }
    f.has_body = chunked || (length && *length > 0);
    return f;
}

const char* status_text(int status) {
    switch (status) {
        case 400:
            return "Bad Request";
        case 408:
            return "Request Timeout";
        case 411:
            return "Length Required";
        case 413:
            return "Payload Too Large";
        case 429:
            return "Too Many Requests";
        case 431:
            return "Request Header Fields Too Large";
        case 501:
            return "Not Implemented";
        case 503:
            return "Service Unavailable";
        default:
            return "Error";
    }
}

std::string address_text(const sockaddr_storage& address, socklen_t length, int& port) {
    char host[NI_MAXHOST] = {};
    char service[NI_MAXSERV] = {};
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, host, sizeof host, service,
                    sizeof service, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        return {};
    }
    port = std::atoi(service);
    return host;
}

}  // namespace

Connection* current_connection() {
    return t_connection;
}

Connection::Connection(int fd, const ConnectionLimits& limits, const std::atomic<bool>& stopping)
    : fd_(fd), limits_(limits), stopping_(stopping), read_deadline_(Clock::now() + limits.header_timeout) {}

bool Connection::wait(short events, Clock::time_point deadline) const {
    for (;;) {
        const auto now = Clock::now();
        if (now >= deadline) {
            return false;
        }
        const auto slice = std::min<Clock::duration>(deadline - now, kStopPoll);
        pollfd p{fd_, events, 0};
        const int n =
            ::poll(&p, 1, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count()));
        if (n > 0) {
            return true;  // ready, or an error or hang-up that the next call reports
        }
        if (n < 0 && errno != EINTR) {
            return false;
        }
        if ((events & POLLIN) && stopping_) {
            return false;
        }
    }
}

Connection::Fill Connection::fill(Clock::time_point deadline) {
    if (!wait(POLLIN, deadline)) {
        if (stopping_) {
            return Fill::Stopping;
        }
        timed_out_ = Clock::now() >= deadline;
        return timed_out_ ? Fill::TimedOut : Fill::Error;
    }
    if (offset_ > 0 && offset_ == buffer_.size()) {
        buffer_.clear();
        offset_ = 0;
    }
    const size_t old_size = buffer_.size();
    buffer_.resize(old_size + kReadChunk);
    ssize_t n = -1;
    do {
        n = ::recv(fd_, buffer_.data() + old_size, kReadChunk, 0);
    } while (n < 0 && errno == EINTR);
    buffer_.resize(old_size + static_cast<size_t>(std::max<ssize_t>(0, n)));
    if (n == 0) {
        return Fill::Closed;
    }
    return n < 0 ? Fill::Error : Fill::Data;
}

bool Connection::is_readable() const {
    return offset_ < buffer_.size() || wait(POLLIN, read_deadline_);
}

bool Connection::is_writable() const {
    return wait(POLLOUT, Clock::now() + limits_.write_timeout);
}

ssize_t Connection::read(char* ptr, size_t size) {
    if (offset_ == buffer_.size()) {
        switch (fill(read_deadline_)) {
            case Fill::Data:
                break;
            case Fill::Closed:
                return 0;
            default:
                return -1;
        }
    }
    const size_t n = std::min(size, buffer_.size() - offset_);
    std::memcpy(ptr, buffer_.data() + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
}

ssize_t Connection::write(const char* ptr, size_t size) {
    size_t sent = 0;
    while (sent < size) {
        if (!is_writable()) {
            return -1;
        }
        const ssize_t n = ::send(fd_, ptr + sent, size - sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
                continue;
            }
            return -1;
        }
        sent += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(size);
}

void Connection::get_remote_ip_and_port(std::string& ip, int& port) const {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
        ip = address_text(address, length, port);
    }
}

void Connection::get_local_ip_and_port(std::string& ip, int& port) const {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
        ip = address_text(address, length, port);
    }
}

// Why a wait ends when no data came.
Connection::Wait Connection::wait_after(Fill result) {
    switch (result) {
        case Fill::TimedOut:
            return Wait::TimedOut;
        case Fill::Stopping:
            return Wait::Stopping;
        default:
            return Wait::Closed;
    }
}

Connection::Wait Connection::wait_for_request(Clock::time_point deadline) {
    // Blank lines before a request are ignored (RFC 9112, 2.2).
    for (;;) {
        while (offset_ < buffer_.size() && (buffer_[offset_] == '\r' || buffer_[offset_] == '\n')) {
            ++offset_;
        }
        if (offset_ < buffer_.size()) {
            return Wait::Ready;
        }
        if (const Fill got = fill(deadline); got != Fill::Data) {
            return wait_after(got);
        }
    }
}

Connection::Wait Connection::read_head(Clock::time_point deadline, size_t max_bytes, size_t& head_size) {
    size_t searched = 0;
    for (;;) {
        const std::string_view data = buffered();
        const size_t end = data.find("\r\n\r\n", searched >= 3 ? searched - 3 : 0);
        if (end != std::string_view::npos && end + 4 <= max_bytes) {
            head_size = end + 4;
            return Wait::Ready;
        }
        if (data.size() >= max_bytes) {
            return Wait::TooLarge;
        }
        searched = data.size();
        if (const Fill got = fill(deadline); got != Fill::Data) {
            return wait_after(got);
        }
    }
}

bool Connection::peer_closed() const {
    pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
    if (::poll(&p, 1, 0) <= 0) {
        return false;
    }
    if (p.revents & (POLLERR | POLLHUP | POLLRDHUP)) {
        return true;
    }
    char c = 0;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void Connection::close_after(httplib::Response& res) {
    closing_ = true;
    if (res.get_header_value("Connection") != "close") {
        res.set_header("Connection", "close");
    }
}

void Connection::begin_request(bool body_expected) {
    body_expected_ = body_expected;
    body_read_ = false;
    timed_out_ = false;
}

HttpServer::HttpServer(ConnectionLimits limits) : limits_(limits) {
    new_task_queue = [this] {
        // httplib takes the queue and deletes it when it stops.
        return new ConnectionPool(limits_.max_connections, limits_.max_pending);  // NOLINT
    };
    set_payload_max_length(limits_.max_body_bytes);
    set_keep_alive_max_count(limits_.max_requests);
    // Responses and stream events go out as they are written, not held for the client's acknowledgement.
    set_tcp_nodelay(true);
    set_logger([](const httplib::Request& req, const httplib::Response& res) {
        t_logged.method = req.method;
        t_logged.path = req.path;
        t_logged.status = res.status;
        t_logged.remote = req.remote_addr + ":" + std::to_string(req.remote_port);
    });
}

void HttpServer::answer_at_once(Connection& connection, int status, const std::string& message,
                                const std::string& code, const std::string& method, const std::string& path,
                                Clock::time_point started) {
    const std::string body = error_body ? error_body(status, message, code, path) : message;
    std::string response =
        "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\nConnection: close\r\n";
    if (status == 429 || status == 503) {
        response += "Retry-After: 1\r\n";
    }
    response += "\r\n" + body;
    connection.write(response.data(), response.size());
    if (on_response) {
        RequestLogEntry entry;
        std::string ip;
        int port = 0;
        connection.get_remote_ip_and_port(ip, port);
        entry.remote = ip + ":" + std::to_string(port);
        entry.method = method.empty() ? "-" : method;
        entry.path = path.empty() ? "-" : path;
        entry.status = status;
        entry.seconds = std::chrono::duration<double>(Clock::now() - started).count();
        on_response(entry);
    }
}

bool HttpServer::serve(Connection& connection) {
    if (t_refuse) {
        answer_at_once(connection, 429,
                       "the server has " + std::to_string(limits_.max_connections) +
                           " connections open and no room for another; try again later",
                       "too_many_connections", "", "", Clock::now());
        return true;
    }
    for (size_t n = 0; n < limits_.max_requests && svr_sock_ != INVALID_SOCKET; ++n) {
        // A new connection's first request is under the header deadline from the start; later ones may wait
        // for the keep-alive timeout before they begin.
        const auto idle_deadline =
            Clock::now() + (n == 0 ? limits_.header_timeout : limits_.keep_alive_timeout);
        if (connection.wait_for_request(idle_deadline) != Connection::Wait::Ready) {
            return false;
        }
        const auto started = Clock::now();
        size_t head_size = 0;
        const Connection::Wait head =
            connection.read_head(started + limits_.header_timeout, limits_.max_head_bytes, head_size);
        if (head == Connection::Wait::TimedOut) {
            answer_at_once(connection, 408, "the request's headers did not arrive in time", "request_timeout",
                           "", "", started);
            return true;
        }
        if (head == Connection::Wait::TooLarge) {
            answer_at_once(
                connection, 431,
                "the request's headers are larger than " + std::to_string(limits_.max_head_bytes) + " bytes",
                "", "", "", started);
            return true;
        }
        if (head != Connection::Wait::Ready) {
            return false;
        }
        const Framing framing =
            check_framing(connection.buffered().substr(0, head_size), limits_.max_body_bytes);
        if (framing.status != 0) {
            answer_at_once(connection, framing.status, framing.message, framing.code, framing.method,
                           framing.path, started);
            return true;
        }
        connection.begin_request(framing.has_body);
        connection.set_read_deadline(Clock::now() + limits_.body_timeout);
        t_logged = {};
        bool closed = false;
        t_connection = &connection;
        const bool ok =
            process_request(connection, n + 1 == limits_.max_requests || stopping_, closed, nullptr);
        t_connection = nullptr;
        if (on_response && t_logged.status != 0) {
            t_logged.seconds = std::chrono::duration<double>(Clock::now() - started).count();
            on_response(t_logged);
        }
        if (!ok || closed || connection.closing() || stopping_ ||
            (connection.body_expected() && !connection.body_read())) {
            return connection.body_expected() && !connection.body_read();
        }
    }
    return false;
}

bool HttpServer::process_and_close_socket(socket_t sock) {
    ++n_open_;
    {
        Connection connection(sock, limits_, stopping_);
        const bool unread = serve(connection);
        // The client may still be sending what was not read: it is read and dropped for a moment after this
        // side is shut, so that the close does not reset the connection before the response is read.
        ::shutdown(sock, SHUT_WR);
        const auto until = Clock::now() + (!unread    ? std::chrono::milliseconds(0)
                                           : t_refuse ? kLingerTime / 10
                                                      : kLingerTime);
        size_t dropped = 0;
        char sink[16 * 1024];
        while (dropped < kLingerBytes && Clock::now() < until) {
            pollfd p{sock, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) {
                if (stopping_) {
                    break;
                }
                continue;
            }
            const ssize_t n = ::recv(sock, sink, sizeof sink, 0);
            if (n <= 0) {
                break;
            }
            dropped += static_cast<size_t>(n);
        }
    }
    ::close(sock);
    --n_open_;
    return true;
}

}  // namespace folio::server
