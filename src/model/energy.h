// Energy accounting (issue #8): what a job, user or team used, in kWh, and what it cost in
// money and CO2 at the administrator's configured price and grid intensity ([energy] in the
// settings file). Energy comes from the GPUs' own counters (NVML's total energy consumption:
// telemetry adds up each job's counter deltas), so it is the GPUs' energy, not the server's.
// Plain value types and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gf {

inline constexpr double kMillijoulesPerKwh = 3.6e9;

// [energy]: unset = not configured (then only kWh are shown).
struct EnergyPrice {
  std::optional<double> price_per_kwh{};  // in `currency` per kWh
  std::string currency = "EUR";
  std::optional<double> co2_g_per_kwh{};  // grid carbon intensity, grams CO2e per kWh
  bool operator==(const EnergyPrice&) const = default;
};

struct EnergyCharge {
  std::int64_t energy_mj = 0;
  double kwh = 0;
  std::optional<double> cost{};    // kwh x price, in the price's currency
  std::string currency{};          // set with cost
  std::optional<double> co2_kg{};  // kwh x intensity / 1000
  bool operator==(const EnergyCharge&) const = default;
};

inline EnergyCharge ChargeFor(std::int64_t energy_mj, const EnergyPrice& price) {
  EnergyCharge charge{.energy_mj = energy_mj,
                      .kwh = static_cast<double>(energy_mj) / kMillijoulesPerKwh};
  if (price.price_per_kwh) {
    charge.cost = charge.kwh * *price.price_per_kwh;
    charge.currency = price.currency;
  }
  if (price.co2_g_per_kwh) {
    charge.co2_kg = charge.kwh * *price.co2_g_per_kwh / 1000.0;
  }
  return charge;
}

}  // namespace gf
