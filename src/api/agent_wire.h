// The JSON of the agent link (service/agent_link.h): hello, session, report batches and
// commands, both ways. Nodes, GPUs and samples travel in the form the public API shows them
// (json_mapping.h: NodeToJson, GpuSampleToJson), read back here; a launch carries only what the
// agent needs to start the job (LaunchJobToJson). argv, env and the workdir are bytes, not
// necessarily UTF-8: they travel in the store codec's form ({"hex": ...} for what is not
// UTF-8), so every byte round-trips.
//
// Readers are strict about types and name the field in errors (kInvalidArgument
// "hello.node.gpus[2].uuid: expected a string"); unknown fields are ignored, so a newer agent
// can talk to an older server. Pure functions; thread-safe; they never throw.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "service/agent_link.h"

namespace gf {

nlohmann::json AgentHelloToJson(const AgentHello& hello);
Result<AgentHello> AgentHelloFromJson(const nlohmann::json& body);

nlohmann::json AgentSessionToJson(const AgentSession& session);
Result<AgentSession> AgentSessionFromJson(const nlohmann::json& body);

nlohmann::json AgentReportBatchToJson(const AgentReportBatch& batch);
Result<AgentReportBatch> AgentReportBatchFromJson(const nlohmann::json& body);

nlohmann::json AgentCommandToJson(const AgentCommand& command);
Result<AgentCommand> AgentCommandFromJson(const nlohmann::json& body);

// The answer to a read_log (POST /agent/logs): {"request", "data_base64", "size",
// "next_offset"}, or {"request", "error": {"code", "message"}} when the agent could not read.
nlohmann::json AgentLogReplyToJson(const AgentLogReply& reply);
Result<AgentLogReply> AgentLogReplyFromJson(const nlohmann::json& body);

// What a user typed into a job's terminal, and its window size (model/terminal.h), as both a
// `terminal` command and the body of POST /api/v1/jobs/{id}/terminal carry it:
// {"input_base64": "...", "rows": 24, "cols": 80} (input may be empty: a keepalive; rows and
// cols together or neither). Errors: kInvalidArgument naming the field under `where`.
nlohmann::json TerminalInputToJson(const TerminalInput& input);
Result<TerminalInput> TerminalInputFromJson(const nlohmann::json& body, const std::string& where);

// Exposed for tests: a node and a sample as the API shows them, read back.
Result<Node> NodeFromJson(const nlohmann::json& body, const std::string& where);
Result<GpuSample> GpuSampleFromJson(const nlohmann::json& body, const std::string& where);

// JSON text for the wire; strings that are not UTF-8 never reach here (see above), but a
// sample's user name from a broken passwd might: it is replaced, not thrown on.
std::string WireDump(const nlohmann::json& value);

}  // namespace gf
