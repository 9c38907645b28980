#include "stream/net_server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace hurray::stream {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

}  // namespace

class NetServer::Impl {
 public:
  Impl(const HrryFile* file, const NetServerConfig& config)
      : file_(file), config_(config), acceptor_(io_), signals_(io_) {}

  absl::Status Listen() {
    boost::system::error_code ec;
    const asio::ip::address address =
        asio::ip::make_address(config_.bind_address, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad bind address '", config_.bind_address, "'"));
    }
    const tcp::endpoint endpoint(address, config_.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", config_.bind_address, ":",
                       config_.port, ": ", ec.message()));
    }
    port_ = acceptor_.local_endpoint(ec).port();
    Accept();
    return absl::OkStatus();
  }

  uint16_t port() const { return port_; }

  void Run() {
    const uint32_t n = config_.threads == 0 ? 1 : config_.threads;
    std::vector<std::thread> extra;
    for (uint32_t i = 1; i < n; ++i) extra.emplace_back([this] { io_.run(); });
    io_.run();
    for (std::thread& t : extra) t.join();
  }

  void Stop() {
    asio::post(io_, [this] { StopNow(); });
  }

  void StopOnSignals() {
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (!ec) StopNow();
    });
  }

  uint64_t accepted() const { return accepted_; }
  uint64_t rejected() const { return rejected_; }

 private:
  class Connection : public std::enable_shared_from_this<Connection> {
   public:
    Connection(Impl* server, tcp::socket socket)
        : server_(server),
          socket_(std::move(socket)),
          timer_(socket_.get_executor()),
          session_(server->file_, server->config_.session),
          buffer_(server->config_.read_buffer_bytes) {}

    void Start() {
      boost::system::error_code ec;
      socket_.set_option(tcp::no_delay(true), ec);
      Touch();
      Pump();
    }

    tcp::socket::executor_type executor() { return socket_.get_executor(); }

    void Close() {
      if (closed_) return;
      closed_ = true;
      boost::system::error_code ec;
      timer_.cancel();
      socket_.shutdown(tcp::socket::shutdown_both, ec);
      socket_.close(ec);
      server_->Forget(shared_from_this());
    }

   private:
    // Any progress pushes the idle deadline back.
    void Touch() {
      if (closed_) return;  // a completion queued before Close() ran
      timer_.expires_after(
          std::chrono::milliseconds(server_->config_.idle_timeout_ms));
      timer_.async_wait(
          [self = shared_from_this()](const boost::system::error_code& ec) {
            if (!ec) self->Close();  // idle: no byte in either direction
          });
    }

    // One step: write what the session has, else close, else read.
    void Pump() {
      if (closed_ || busy_) return;
      const auto out = session_.Output();
      if (!out.empty()) {
        gather_.clear();
        for (const auto& part : out) {
          gather_.emplace_back(part.data(), part.size());
        }
        busy_ = true;
        asio::async_write(socket_, gather_,
                          [self = shared_from_this()](
                              const boost::system::error_code& ec, size_t n) {
                            self->busy_ = false;
                            if (ec || self->closed_) return self->Close();
                            self->session_.ConsumeOutput(n);
                            self->Touch();
                            self->Pump();
                          });
        return;
      }
      if (session_.Closed()) {
        if (session_.status().ok()) return Close();
        ++server_->rejected_;
        return Linger();
      }
      if (!session_.WantsInput()) return;  // cannot happen: output was empty
      busy_ = true;
      socket_.async_read_some(
          asio::buffer(buffer_),
          [self = shared_from_this()](const boost::system::error_code& ec,
                                      size_t n) {
            self->busy_ = false;
            if (self->closed_) return;
            if (ec == asio::error::eof) {
              (void)self->session_.Finish();
            } else if (ec) {
              return self->Close();
            } else {
              (void)self->session_.Feed(
                  absl::MakeConstSpan(self->buffer_.data(), n));
            }
            self->Touch();
            self->Pump();
          });
    }

    // After an ERROR: stop sending, then read and drop what the client still
    // sends (briefly, and at most kLingerBytes) so that closing with unread
    // bytes does not reset the connection before the client read the ERROR.
    void Linger() {
      boost::system::error_code ec;
      socket_.shutdown(tcp::socket::shutdown_send, ec);
      timer_.expires_after(std::chrono::milliseconds(
          std::min<uint32_t>(server_->config_.idle_timeout_ms, 1000)));
      timer_.async_wait(
          [self = shared_from_this()](const boost::system::error_code& e) {
            if (!e) self->Close();
          });
      DropInput();
    }

    void DropInput() {
      static constexpr size_t kLingerBytes = 1 << 20;
      if (closed_) return;
      busy_ = true;
      socket_.async_read_some(
          asio::buffer(buffer_),
          [self = shared_from_this()](const boost::system::error_code& e,
                                      size_t n) {
            self->busy_ = false;
            self->lingered_ += n;
            if (e || self->lingered_ > kLingerBytes) return self->Close();
            self->DropInput();
          });
    }

    Impl* server_;
    tcp::socket socket_;
    asio::steady_timer timer_;
    NetServerSession session_;
    std::vector<uint8_t> buffer_;
    std::vector<asio::const_buffer> gather_;
    bool busy_ = false;
    bool closed_ = false;
    size_t lingered_ = 0;
  };

  void Accept() {
    acceptor_.async_accept(
        asio::make_strand(io_),
        [this](const boost::system::error_code& ec, tcp::socket socket) {
          if (ec) {
            if (stopping_) return;
            if (ec == asio::error::operation_aborted) return;
            return Accept();  // e.g. EMFILE: keep serving the others
          }
          if (stopping_) return;
          std::shared_ptr<Connection> c;
          {
            std::lock_guard<std::mutex> lock(mu_);
            if (connections_.size() < config_.max_connections) {
              c = std::make_shared<Connection>(this, std::move(socket));
              connections_.insert(c);
            }
          }
          if (c != nullptr) {
            ++accepted_;
            c->Start();
          }
          Accept();
        });
  }

  void Forget(const std::shared_ptr<Connection>& c) {
    std::lock_guard<std::mutex> lock(mu_);
    connections_.erase(c);
  }

  void StopNow() {
    if (stopping_) return;
    stopping_ = true;
    boost::system::error_code ec;
    acceptor_.close(ec);
    signals_.cancel(ec);
    std::vector<std::shared_ptr<Connection>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all.assign(connections_.begin(), connections_.end());
    }
    // Each connection runs on its own strand.
    for (const auto& c : all) {
      asio::post(c->executor(), [c] { c->Close(); });
    }
  }

  const HrryFile* file_;
  NetServerConfig config_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> rejected_{0};
  std::mutex mu_;
  std::unordered_set<std::shared_ptr<Connection>> connections_;
};

NetServer::NetServer(const HrryFile* file, const NetServerConfig& config)
    : impl_(std::make_unique<Impl>(file, config)) {}
NetServer::~NetServer() = default;
absl::Status NetServer::Listen() { return impl_->Listen(); }
uint16_t NetServer::port() const { return impl_->port(); }
void NetServer::Run() { impl_->Run(); }
void NetServer::Stop() { impl_->Stop(); }
void NetServer::StopOnSignals() { impl_->StopOnSignals(); }
uint64_t NetServer::connections_accepted() const { return impl_->accepted(); }
uint64_t NetServer::connections_rejected() const { return impl_->rejected(); }

}  // namespace hurray::stream
