#include <atomic>
#include <thread>

#include "boost/asio/io_context.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/thread_pool.hpp"
#include "boost/version.hpp"
#include "gtest/gtest.h"

namespace {

TEST(BoostSmoke, AsioPost) {
  static_assert(BOOST_VERSION >= 108100);
  boost::asio::io_context io;
  int ran = 0;
  boost::asio::post(io, [&] { ++ran; });
  io.run();
  EXPECT_EQ(ran, 1);
}

TEST(BoostSmoke, AsioThreadPool) {
  boost::asio::thread_pool pool(2);
  std::atomic<int> ran{0};
  for (int i = 0; i < 8; ++i) boost::asio::post(pool, [&] { ++ran; });
  pool.join();
  EXPECT_EQ(ran.load(), 8);
}

}  // namespace
