#include "stream/net/server.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <cerrno>
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "stream/net/admission.h"
#include "stream/net/message.h"

namespace hurray::stream::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Connections being refused that still linger to let the client read the
// ERROR; beyond this, a refused connection is closed at once.
constexpr int kMaxLingeringRefusals = 64;
constexpr auto kRefusalLinger = std::chrono::milliseconds(300);
// After accept() failed for want of descriptors, retry after this long.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(50);

// async_write's completion condition for the frames: every sendmsg offers
// the kernel all that is left. Asio's own transfer_all offers at most
// 64 KiB (default_max_transfer_size), so a 1 MiB TENSOR_DATA frame took 16
// or more system calls and as many trips through the reactor, although the
// socket's send buffer (autotuned up to tcp_wmem's maximum) takes far more
// at once (bench/RESULTS.md, issue 18: about 8,800 sendmsg calls per
// 512 MiB served became about 600).
struct AllThatIsLeft {
  size_t operator()(const boost::system::error_code& ec, size_t) const {
    return ec ? 0 : std::numeric_limits<size_t>::max();
  }
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Clock::now().time_since_epoch())
      .count();
}

// One read buffer per event-loop thread.
std::vector<uint8_t>& ReadBuffer(size_t size) {
  thread_local std::vector<uint8_t> buffer;
  if (buffer.size() < size) buffer.resize(size);
  return buffer;
}

std::vector<uint8_t> ErrorFrame(net::ErrorCode code, absl::string_view text) {
  std::vector<uint8_t> out;
  net::AppendError(&out, 1, {static_cast<uint32_t>(code), text});
  return out;
}

}  // namespace

uint32_t DefaultMaxConnections() {
  constexpr uint64_t kReserve = 64;
  constexpr uint64_t kMax = 65536;
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) {
    return static_cast<uint32_t>(kMax);
  }
  const uint64_t soft = r.rlim_cur;
  const uint64_t n = soft > 2 * kReserve ? soft - kReserve : soft / 2;
  return static_cast<uint32_t>(std::clamp<uint64_t>(n, 1, kMax));
}

absl::StatusOr<std::string> StatIdentity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("stat ", path));
  }
  const int64_t mtime_ns =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return absl::StrCat("dev=", static_cast<uint64_t>(st.st_dev),
                      " ino=", static_cast<uint64_t>(st.st_ino),
                      " size=", static_cast<uint64_t>(st.st_size),
                      " mtime_ns=", mtime_ns);
}

std::string ServedFileIdentity(absl::string_view stat_identity,
                               const container::HrryFile& file) {
  return absl::StrCat(
      "hrry ", stat_identity, " index_crc32c=",
      absl::Hex(file.geometry().trailer.index_crc32c, absl::kZeroPad8));
}

class NetServer::Impl {
 public:
  Impl(const container::HrryFile* file, const NetServerConfig& config)
      : file_(file),
        config_(Normalized(config)),
        acceptor_(io_),
        accept_timer_(io_),
        signals_(io_),
        admission_(config_.max_connections, config_.max_connections_per_peer) {}

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

  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> displaced_{0};
  std::atomic<uint64_t> timed_out_{0};
  std::atomic<uint64_t> over_budget_{0};

 private:
  using Id = NetAdmission::Id;
  using Waiting = NetAdmission::Waiting;

  static NetServerConfig Normalized(NetServerConfig c) {
    if (c.max_connections == 0) c.max_connections = DefaultMaxConnections();
    if (c.max_connections_per_peer == 0 ||
        c.max_connections_per_peer > c.max_connections) {
      c.max_connections_per_peer = c.max_connections;
    }
    if (c.read_buffer_bytes == 0) c.read_buffer_bytes = 4096;
    return c;
  }

  class Connection : public std::enable_shared_from_this<Connection> {
   public:
    Connection(Impl* server, tcp::socket socket, Id id)
        : server_(server),
          id_(id),
          socket_(std::move(socket)),
          timer_(socket_.get_executor()),
          deadline_(socket_.get_executor()),
          session_(server->file_, server->config_.session) {}

    void Start() {
      boost::system::error_code ec;
      socket_.set_option(tcp::no_delay(true), ec);
      socket_.non_blocking(true, ec);
      // The HELLO's deadline runs from the accept.
      budget_on_ = true;
      budget_hello_ = true;
      budget_left_ =
          std::chrono::milliseconds(server_->config_.hello_timeout_ms);
      since_ = NowNs();
      Touch();
      Pump();
    }

    tcp::socket::executor_type executor() { return socket_.get_executor(); }

    void Close() {
      if (closed_) return;
      closed_ = true;
      boost::system::error_code ec;
      timer_.cancel();
      deadline_.cancel();
      socket_.shutdown(tcp::socket::shutdown_both, ec);
      socket_.close(ec);
      server_->Release(charged_);
      charged_ = 0;
      server_->Forget(id_);
    }

    // A newer connection took this one's place.
    void Displace() {
      if (closed_) return;
      ++server_->displaced_;
      Abort(net::ErrorCode::kInvalidMessage,
            "server full: the connection was closed to admit another");
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

    // Best-effort ERROR (the socket is non-blocking: whatever fits in its
    // send buffer now), then close.
    void Abort(net::ErrorCode code, absl::string_view why) {
      if (closed_) return;
      if (!busy_writing_) {
        const std::vector<uint8_t> e = ErrorFrame(code, why);
        boost::system::error_code ec;
        socket_.write_some(asio::buffer(e), ec);
      }
      Close();
    }

    void SetWaiting(Waiting what, int64_t since) {
      if (what == waiting_ && since == waiting_since_) return;
      waiting_ = what;
      waiting_since_ = since;
      server_->SetWaiting(id_, what, since);
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
        SetWaiting(Waiting::kNone, 0);
        busy_ = true;
        busy_writing_ = true;
        asio::async_write(socket_, gather_, AllThatIsLeft(),
                          [self = shared_from_this()](
                              const boost::system::error_code& ec, size_t n) {
                            self->busy_ = false;
                            self->busy_writing_ = false;
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
      WaitForInput();
    }

    // Chooses the deadline of what the connection waits for, then waits
    // until the socket is readable.
    void WaitForInput() {
      const Clock::time_point now = Clock::now();
      if (!session_.hello_received()) {
        SetWaiting(Waiting::kHello, since_);
      } else if (session_.in_message()) {
        if (!budget_on_ || budget_hello_ ||
            budget_at_ != session_.message_at()) {
          budget_on_ = true;
          budget_hello_ = false;
          budget_at_ = session_.message_at();
          budget_left_ =
              std::chrono::milliseconds(server_->config_.message_timeout_ms);
          since_ = NowNs();
        }
        SetWaiting(Waiting::kMessageRest, since_);
      } else {
        if (budget_on_ || waiting_ != Waiting::kNextMessage) since_ = NowNs();
        budget_on_ = false;
        SetWaiting(Waiting::kNextMessage, since_);
      }
      if (budget_on_) {
        wait_started_ = now;
        const uint64_t generation = ++deadline_generation_;
        deadline_.expires_after(budget_left_);
        deadline_.async_wait([self = shared_from_this(),
                              generation](const boost::system::error_code& ec) {
          if (ec || generation != self->deadline_generation_) return;
          ++self->server_->timed_out_;
          self->Abort(net::ErrorCode::kInvalidMessage,
                      self->budget_hello_
                          ? "no CLIENT_HELLO within the hello timeout"
                          : "a message did not arrive whole within the "
                            "message timeout");
        });
      }
      busy_ = true;
      socket_.async_wait(
          tcp::socket::wait_read,
          [self = shared_from_this()](const boost::system::error_code& ec) {
            self->busy_ = false;
            if (self->closed_) return;
            self->PauseDeadline();
            if (ec) return self->Close();
            self->ReadNow();
          });
    }

    // Stops the deadline clock while the connection is not waiting to read.
    void PauseDeadline() {
      if (!budget_on_) return;
      ++deadline_generation_;
      deadline_.cancel();
      budget_left_ -= std::chrono::duration_cast<Clock::duration>(
          Clock::now() - wait_started_);
    }

    void ReadNow() {
      std::vector<uint8_t>& buffer =
          ReadBuffer(server_->config_.read_buffer_bytes);
      boost::system::error_code ec;
      const size_t n = socket_.read_some(
          asio::buffer(buffer.data(), server_->config_.read_buffer_bytes), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) {
        return Pump();
      }
      if (ec == asio::error::eof) {
        (void)session_.Finish();
      } else if (ec) {
        return Close();
      } else {
        (void)session_.Feed(absl::MakeConstSpan(buffer.data(), n));
      }
      if (!Charge()) return;
      Touch();
      Pump();
    }

    // Draws what the session holds beyond the allowance from the shared
    // budget; false (and closed) when the budget cannot cover it.
    bool Charge() {
      const uint64_t held = session_.buffered_bytes();
      const uint64_t allowance = server_->config_.control_allowance_bytes;
      const uint64_t want = held > allowance ? held - allowance : 0;
      if (want <= charged_) {
        server_->Release(charged_ - want);
        charged_ = want;
        return true;
      }
      if (!server_->Draw(want - charged_)) {
        ++server_->over_budget_;
        Abort(net::ErrorCode::kMessageTooLarge,
              "the server's budget for buffered messages is exhausted");
        return false;
      }
      charged_ = want;
      return true;
    }

    // After an ERROR: stop sending, then read and drop what the client still
    // sends (briefly, and at most kLingerBytes) so that closing with unread
    // bytes does not reset the connection before the client read the ERROR.
    void Linger() {
      boost::system::error_code ec;
      socket_.shutdown(tcp::socket::shutdown_send, ec);
      SetWaiting(Waiting::kHello, 0);  // the first to go if room is needed
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
      socket_.async_wait(
          tcp::socket::wait_read,
          [self = shared_from_this()](const boost::system::error_code& e) {
            self->busy_ = false;
            if (self->closed_) return;
            if (e) return self->Close();
            std::vector<uint8_t>& buffer =
                ReadBuffer(self->server_->config_.read_buffer_bytes);
            boost::system::error_code ec;
            const size_t n = self->socket_.read_some(
                asio::buffer(buffer.data(),
                             self->server_->config_.read_buffer_bytes),
                ec);
            self->lingered_ += n;
            if ((ec && ec != asio::error::would_block &&
                 ec != asio::error::try_again) ||
                self->lingered_ > kLingerBytes) {
              return self->Close();
            }
            self->DropInput();
          });
    }

    Impl* server_;
    Id id_;
    tcp::socket socket_;
    asio::steady_timer timer_;     // idle
    asio::steady_timer deadline_;  // HELLO or message
    NetServerSession session_;
    std::vector<asio::const_buffer> gather_;
    bool busy_ = false;
    bool busy_writing_ = false;
    bool closed_ = false;
    size_t lingered_ = 0;
    uint64_t charged_ = 0;
    // The deadline: on for the HELLO, and for a message once its first
    // byte arrived; budget_left_ shrinks only while waiting to read.
    bool budget_on_ = false;
    bool budget_hello_ = false;
    uint64_t budget_at_ = 0;
    Clock::duration budget_left_{};
    Clock::time_point wait_started_;
    uint64_t deadline_generation_ = 0;
    int64_t since_ = 0;
    Waiting waiting_ = Waiting::kHello;
    int64_t waiting_since_ = -1;
  };

  // Answers a connection the server has no room for: ERROR, then a short
  // linger so the client can read it before the close.
  class Refusal : public std::enable_shared_from_this<Refusal> {
   public:
    Refusal(Impl* server, tcp::socket socket)
        : server_(server),
          socket_(std::move(socket)),
          timer_(socket_.get_executor()),
          frame_(ErrorFrame(net::ErrorCode::kInvalidMessage,
                            "server full: too many connections")) {}

    void Start() {
      asio::async_write(socket_, asio::buffer(frame_),
                        [self = shared_from_this()](
                            const boost::system::error_code& ec, size_t) {
                          if (ec) return self->Close();
                          boost::system::error_code e;
                          self->socket_.shutdown(tcp::socket::shutdown_send, e);
                          self->Drain();
                        });
      timer_.expires_after(kRefusalLinger);
      timer_.async_wait(
          [self = shared_from_this()](const boost::system::error_code& ec) {
            if (!ec) self->Close();
          });
    }

   private:
    void Drain() {
      socket_.async_wait(
          tcp::socket::wait_read,
          [self = shared_from_this()](const boost::system::error_code& ec) {
            if (ec || self->closed_) return self->Close();
            uint8_t sink[512];
            boost::system::error_code e;
            self->socket_.non_blocking(true, e);
            self->socket_.read_some(asio::buffer(sink), e);
            if (e && e != asio::error::would_block &&
                e != asio::error::try_again) {
              return self->Close();
            }
            self->Drain();
          });
    }

    void Close() {
      if (closed_) return;
      closed_ = true;
      boost::system::error_code ec;
      timer_.cancel();
      socket_.close(ec);
      --server_->lingering_;
    }

    Impl* server_;
    tcp::socket socket_;
    asio::steady_timer timer_;
    std::vector<uint8_t> frame_;
    bool closed_ = false;
  };

  void Accept() {
    acceptor_.async_accept(
        asio::make_strand(io_),
        [this](const boost::system::error_code& ec, tcp::socket socket) {
          if (stopping_) return;
          if (ec) {
            if (ec == asio::error::operation_aborted) return;
            // e.g. EMFILE: keep serving the others, retry a little later
            // (at once would spin while no descriptor is free).
            accept_timer_.expires_after(kAcceptBackoff);
            accept_timer_.async_wait(
                [this](const boost::system::error_code& e) {
                  if (!e && !stopping_) Accept();
                });
            return;
          }
          Admit(std::move(socket));
          Accept();
        });
  }

  void Admit(tcp::socket socket) {
    boost::system::error_code ec;
    const tcp::endpoint remote = socket.remote_endpoint(ec);
    const std::string peer =
        ec ? std::string("?") : remote.address().to_string();
    std::shared_ptr<Connection> c, victim;
    NetAdmission::Decision d;
    {
      std::lock_guard<std::mutex> lock(mu_);
      d = admission_.Admit(peer, NowNs());
      if (d.victim != 0) {
        const auto it = connections_.find(d.victim);
        if (it != connections_.end()) victim = it->second;
      }
    }
    if (d.admitted) {
      // Built outside the lock: a session looks at the file's descriptors.
      c = std::make_shared<Connection>(this, std::move(socket), d.id);
      std::lock_guard<std::mutex> lock(mu_);
      connections_.emplace(d.id, c);
    }
    if (victim != nullptr) {
      asio::post(victim->executor(), [victim] { victim->Displace(); });
    }
    if (c != nullptr) {
      ++accepted_;
      asio::post(c->executor(), [c] { c->Start(); });
      return;
    }
    ++refused_;
    if (lingering_.fetch_add(1) < kMaxLingeringRefusals) {
      std::make_shared<Refusal>(this, std::move(socket))->Start();
      return;
    }
    --lingering_;
    const std::vector<uint8_t> e = ErrorFrame(
        net::ErrorCode::kInvalidMessage, "server full: too many connections");
    socket.non_blocking(true, ec);
    socket.write_some(asio::buffer(e), ec);
    socket.close(ec);
  }

  void SetWaiting(Id id, Waiting what, int64_t since) {
    std::lock_guard<std::mutex> lock(mu_);
    admission_.SetWaiting(id, what, since);
  }

  void Forget(Id id) {
    std::shared_ptr<Connection> keep;  // destroyed outside the lock
    std::lock_guard<std::mutex> lock(mu_);
    admission_.Remove(id);
    const auto it = connections_.find(id);
    if (it == connections_.end()) return;
    keep = std::move(it->second);
    connections_.erase(it);
  }

  bool Draw(uint64_t n) {
    uint64_t now = control_bytes_.load();
    do {
      if (n > config_.control_budget_bytes -
                  std::min(now, config_.control_budget_bytes)) {
        return false;
      }
    } while (!control_bytes_.compare_exchange_weak(now, now + n));
    return true;
  }
  void Release(uint64_t n) { control_bytes_ -= n; }

  void StopNow() {
    if (stopping_) return;
    stopping_ = true;
    boost::system::error_code ec;
    acceptor_.close(ec);
    accept_timer_.cancel();
    signals_.cancel(ec);
    std::vector<std::shared_ptr<Connection>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, c] : connections_) all.push_back(c);
    }
    // Each connection runs on its own strand.
    for (const auto& c : all) {
      asio::post(c->executor(), [c] { c->Close(); });
    }
  }

  const container::HrryFile* file_;
  NetServerConfig config_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::steady_timer accept_timer_;
  asio::signal_set signals_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> lingering_{0};
  std::atomic<uint64_t> control_bytes_{0};
  std::mutex mu_;
  NetAdmission admission_;  // guarded by mu_
  absl::flat_hash_map<Id, std::shared_ptr<Connection>> connections_;
};

NetServer::NetServer(const container::HrryFile* file,
                     const NetServerConfig& config)
    : impl_(std::make_unique<Impl>(file, config)) {}
NetServer::~NetServer() = default;
absl::Status NetServer::Listen() { return impl_->Listen(); }
uint16_t NetServer::port() const { return impl_->port(); }
void NetServer::Run() { impl_->Run(); }
void NetServer::Stop() { impl_->Stop(); }
void NetServer::StopOnSignals() { impl_->StopOnSignals(); }
uint64_t NetServer::connections_accepted() const { return impl_->accepted_; }
uint64_t NetServer::connections_rejected() const { return impl_->rejected_; }
uint64_t NetServer::connections_refused() const { return impl_->refused_; }
uint64_t NetServer::connections_displaced() const { return impl_->displaced_; }
uint64_t NetServer::connections_timed_out() const { return impl_->timed_out_; }
uint64_t NetServer::connections_over_budget() const {
  return impl_->over_budget_;
}

}  // namespace hurray::stream::net
