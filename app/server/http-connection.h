// The server's HTTP connections on cpp-httplib's request parsing and routing, with limits of their own: a
// bounded pool of connection threads (idle keep-alive and slow connections hold one each, not a place among
// the requests being served), a deadline for a request's line and headers, another for its body, an idle
// keep-alive timeout, the request's framing checked before its body is read (Content-Length and
// Transfer-Encoding: a malformed, negative, repeated or conflicting length is answered 400 at once, one over
// the body limit 413 at once), and a way for a handler to see that its client has gone.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace folio::server {

struct ConnectionLimits {
    size_t max_connections = 1088;  // connections served at once, idle ones included
    size_t max_pending = 64;        // accepted connections waiting for a thread; more are answered 429
    std::chrono::milliseconds header_timeout{10000};  // the request line and headers, from their first byte
    std::chrono::milliseconds body_timeout{60000};    // the whole body, from the end of the headers
    std::chrono::milliseconds keep_alive_timeout{5000};  // an idle connection between requests
    std::chrono::milliseconds write_timeout{10000};  // a client that reads nothing for this long is dropped
    size_t max_head_bytes = 32 * 1024;
    size_t max_body_bytes = size_t{64} << 20;
    size_t max_requests = 10000;  // requests one connection may carry before it is closed
};

// One line of the request log: what was asked, how it was answered, in how long.
struct RequestLogEntry {
    std::string remote;  // address:port
    std::string method;
    std::string path;
    int status = 0;
    double seconds = 0.0;
};

// A client connection as httplib reads and writes it: buffered reads under the deadline of the phase the
// request is in, writes under the write timeout, both ending early when the server stops.
class Connection final : public httplib::Stream {
public:
    Connection(int fd, const ConnectionLimits& limits, const std::atomic<bool>& stopping);

    bool is_readable() const override;
    bool is_writable() const override;
    ssize_t read(char* ptr, size_t size) override;
    ssize_t write(const char* ptr, size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override;
    void get_local_ip_and_port(std::string& ip, int& port) const override;
    int socket() const override { return fd_; }

    enum class Wait { Ready, Closed, TimedOut, Stopping, TooLarge };
    // Waits for the first byte of a request until deadline.
    Wait wait_for_request(std::chrono::steady_clock::time_point deadline);
    // Reads until the buffer holds a whole request head (up to its blank line), at most max_bytes.
    Wait read_head(std::chrono::steady_clock::time_point deadline, size_t max_bytes, size_t& head_size);
    std::string_view buffered() const { return {buffer_.data() + offset_, buffer_.size() - offset_}; }
    void set_read_deadline(std::chrono::steady_clock::time_point deadline) { read_deadline_ = deadline; }
    // Whether the last read failed for its deadline.
    bool timed_out() const { return timed_out_; }

    // Whether the client has closed its side or reset the connection (data it sent ahead does not count).
    bool peer_closed() const;
    // The response closes the connection: a body left unread, a refusal. Sets its Connection header.
    void close_after(httplib::Response& res);
    bool closing() const { return closing_; }
    // The request's body was read to its end (set by the handler that read it).
    void set_body_read() { body_read_ = true; }
    bool body_read() const { return body_read_; }
    bool body_expected() const { return body_expected_; }

    // Starts a request: its head is buffered; body_expected says whether a body follows it.
    void begin_request(bool body_expected);

private:
    enum class Fill { Data, Closed, TimedOut, Stopping, Error };
    Fill fill(std::chrono::steady_clock::time_point deadline);
    static Wait wait_after(Fill result);
    bool wait(short events, std::chrono::steady_clock::time_point deadline) const;

    int fd_;
    const ConnectionLimits& limits_;
    const std::atomic<bool>& stopping_;
    std::vector<char> buffer_;
    size_t offset_ = 0;
    std::chrono::steady_clock::time_point read_deadline_;
    bool timed_out_ = false;
    bool closing_ = false;
    bool body_expected_ = false;
    bool body_read_ = false;
};

// The connection whose request this thread is serving; null outside a request's handler.
Connection* current_connection();

// httplib's server with the connections above: the listening thread hands each accepted socket to a bounded
// pool, and each connection's requests are served on its thread.
class HttpServer : public httplib::Server {
public:
    explicit HttpServer(ConnectionLimits limits);
    // Idle connections and connections still sending a request are closed; requests being served finish.
    void begin_stop() { stopping_ = true; }
    // Called after each response with the request log's line, when set.
    std::function<void(const RequestLogEntry&)> on_response;
    // Writes an error response of the API's shape (status, message, code); set by the owner.
    std::function<std::string(int status, const std::string& message, const std::string& code,
                              const std::string& path)>
        error_body;
    int open_connections() const { return n_open_.load(); }

private:
    bool process_and_close_socket(socket_t sock) override;
    // Serves the connection's requests; true when it ends with input left unread.
    bool serve(Connection& connection);
    void answer_at_once(Connection& connection, int status, const std::string& message,
                        const std::string& code, const std::string& method, const std::string& path,
                        std::chrono::steady_clock::time_point started);

    ConnectionLimits limits_;
    std::atomic<bool> stopping_{false};
    std::atomic<int> n_open_{0};
};

}  // namespace folio::server
