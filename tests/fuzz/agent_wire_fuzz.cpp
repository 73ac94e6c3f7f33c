// Fuzz target: the agent link's readers of what arrives from the network (api/agent_wire.h),
// here the command (read by agents; read_log is checked for a round trip) and the log reply
// (read by the server, with its base64). The input is JSON text; text nlohmann::json rejects is
// skipped (that parser is not ours). Oracle beyond ASan/UBSan: errors are kInvalidArgument, and
// what was read writes back and reads again to the same values (the bytes of a chunk exactly).
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "api/agent_wire.h"
#include "core/check.h"

namespace {

void CommandRoundTrips(const nlohmann::json& body) {
  gf::Result<gf::AgentCommand> command = gf::AgentCommandFromJson(body);
  if (!command.ok()) {
    GF_CHECK(command.error().code == gf::ErrorCode::kInvalidArgument);
    return;
  }
  if (command->kind != gf::AgentCommand::Kind::kReadLog) {
    return;  // launch, kill, ack: agent_wire_test covers their round trips
  }
  const nlohmann::json again =
      nlohmann::json::parse(gf::WireDump(gf::AgentCommandToJson(*command)));
  gf::Result<gf::AgentCommand> back = gf::AgentCommandFromJson(again);
  GF_CHECK(back.ok());
  GF_CHECK(back->kind == command->kind && back->seq == command->seq);
  GF_CHECK(back->request == command->request && back->log.offset == command->log.offset &&
           back->log.limit == command->log.limit && back->log.stream == command->log.stream);
}

void LogReplyRoundTrips(const nlohmann::json& body) {
  gf::Result<gf::AgentLogReply> reply = gf::AgentLogReplyFromJson(body);
  if (!reply.ok()) {
    GF_CHECK(reply.error().code == gf::ErrorCode::kInvalidArgument);
    return;
  }
  const nlohmann::json again = nlohmann::json::parse(gf::WireDump(gf::AgentLogReplyToJson(*reply)));
  gf::Result<gf::AgentLogReply> back = gf::AgentLogReplyFromJson(again);
  GF_CHECK(back.ok());
  GF_CHECK(back->request == reply->request);
  GF_CHECK(back->chunk.ok() == reply->chunk.ok());
  if (reply->chunk.ok()) {
    GF_CHECK(back->chunk->data == reply->chunk->data);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json body = nlohmann::json::parse(data, data + size, nullptr, false);
  if (body.is_discarded()) {
    return 0;
  }
  CommandRoundTrips(body);
  LogReplyRoundTrips(body);
  return 0;
}
