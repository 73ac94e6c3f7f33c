# Every dependency comes from a Debian -dev package (scripts/bootstrap.sh installs them).
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)          # headers only: Asio, Beast
find_package(nlohmann_json 3.10 REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(toml11 3.7 REQUIRED)          # the config file (src/config)
find_package(OpenSSL 3 REQUIRED)           # TLS on the API's TCP side (src/api)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PQXX REQUIRED IMPORTED_TARGET libpqxx>=6.4)  # PostgreSQL store (src/store)
# The kubelet's pod-resources gRPC API (src/kube). Debian's gRPC ships a CMake package whose
# targets pull in every abseil and upb component by name; its pkg-config file is the stable
# interface, so grpc++ comes from pkg-config and protobuf from CMake's own FindProtobuf.
find_package(Protobuf 3.12 REQUIRED)
pkg_check_modules(GRPCPP REQUIRED IMPORTED_TARGET grpc++>=1.30)
find_program(GF_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
if(GF_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(rapidcheck QUIET)
endif()
if(GF_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
