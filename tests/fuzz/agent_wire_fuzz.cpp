// Fuzz target: the agent link's readers of what arrives from the network (api/agent_wire.h),
// here the command (read by agents; read_log and signal are checked for a round trip) and the log
// reply (read by the server, with its base64). The input is JSON text, read as both ends read it:
// ParseJsonText (json/json_text.h: depth limit, no duplicate keys). Oracle beyond ASan/UBSan:
// errors are kInvalidArgument, and what was read writes back and reads again to the same values
// (the bytes of a chunk exactly).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/agent_wire.h"
#include "core/check.h"
#include "json/json_text.h"

namespace {

// What the other end reads: our own output must always pass the reader's limits.
nlohmann::json Reread(const nlohmann::json& written) {
  gf::Result<nlohmann::json> again = gf::ParseJsonText(gf::WireDump(written), "again");
  GF_CHECK(again.ok());
  return *std::move(again);
}

void CommandRoundTrips(const nlohmann::json& body) {
  gf::Result<gf::AgentCommand> command = gf::AgentCommandFromJson(body);
  if (!command.ok()) {
    GF_CHECK(command.error().code == gf::ErrorCode::kInvalidArgument);
    return;
  }
  if (command->kind != gf::AgentCommand::Kind::kReadLog &&
      command->kind != gf::AgentCommand::Kind::kSignal) {
    return;  // launch, kill, ack: agent_wire_test covers their round trips
  }
  const nlohmann::json again = Reread(gf::AgentCommandToJson(*command));
  gf::Result<gf::AgentCommand> back = gf::AgentCommandFromJson(again);
  GF_CHECK(back.ok());
  GF_CHECK(back->kind == command->kind && back->seq == command->seq);
  // A signal the agent would deliver is one `gpufleet cancel --signal` may send.
  GF_CHECK(back->signal == command->signal);
  if (command->kind == gf::AgentCommand::Kind::kSignal) {
    GF_CHECK(command->signal >= 1 && command->signal <= gf::kMaxJobSignal &&
             command->signal != gf::kSigKill);
    return;
  }
  GF_CHECK(back->request == command->request && back->log.offset == command->log.offset &&
           back->log.limit == command->log.limit && back->log.stream == command->log.stream);
}

void LogReplyRoundTrips(const nlohmann::json& body) {
  gf::Result<gf::AgentLogReply> reply = gf::AgentLogReplyFromJson(body);
  if (!reply.ok()) {
    GF_CHECK(reply.error().code == gf::ErrorCode::kInvalidArgument);
    return;
  }
  const nlohmann::json again = Reread(gf::AgentLogReplyToJson(*reply));
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
  gf::Result<nlohmann::json> body =
      gf::ParseJsonText(std::string_view(reinterpret_cast<const char*>(data), size), "body");
  if (!body.ok()) {
    GF_CHECK(body.error().code == gf::ErrorCode::kInvalidArgument);
    return 0;
  }
  CommandRoundTrips(*body);
  LogReplyRoundTrips(*body);
  return 0;
}
