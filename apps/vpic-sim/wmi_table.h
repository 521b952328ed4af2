// apps/vpic-sim/wmi_table.h
//
// World Manufacturer Identifiers (VIN positions 1-3) that vpic-sim decodes, with the make,
// manufacturer and vehicle type vPIC reports for them. A VIN whose WMI is not listed gets vPIC's
// error 7 ("Manufacturer is not registered with NHTSA ...") and nothing decoded.
//
// Small manufacturers share a WMI whose third character is '9'; positions 12-14 then name the
// maker (e.g. YT9 + 007 is Koenigsegg), so such entries carry that suffix too.
//
// The vehicle class decides the model-year rule: for passenger cars, MPVs and light trucks,
// position 7 tells which 30-year cycle position 10 belongs to (49 CFR 565.15); for the others it
// does not.
//
// Thread safety: the table is immutable. Time: none.
//
// Example:
//   const WmiEntry* wmi = FindWmi("1FTMW1T88MFA00001");
//   if (wmi != nullptr) { fmt::print("{} / {}\n", wmi->make, wmi->manufacturer); }  // FORD / ...
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace fusebox::vpic_sim {

enum class VehicleClass : std::uint8_t {
  kPassengerCar,
  kMpv,         // multipurpose passenger vehicle (SUVs, minivans)
  kLightTruck,  // GVWR <= 10,000 lb
  kHeavyTruck,  // GVWR > 10,000 lb
  kBus,
  kMotorcycle,
  kIncomplete,  // chassis cabs and stripped chassis
};

struct WmiEntry {
  std::string_view wmi;           // positions 1-3, upper case
  std::string_view small_maker;   // positions 12-14 when wmi[2] == '9', else empty
  std::string_view make;          // vPIC's Make, e.g. "FORD"
  std::string_view manufacturer;  // vPIC's Manufacturer, e.g. "FORD MOTOR COMPANY, USA"
  VehicleClass vehicle_class;
};

// The whole table, in no particular order. Every (wmi, small_maker) pair is unique.
std::span<const WmiEntry> WmiTable();

// The entry for a normalized VIN (or partial VIN), or nullptr when its WMI is unknown. Needs at
// least 3 characters; for a small-manufacturer WMI it also needs positions 12-14.
const WmiEntry* FindWmi(std::string_view vin);

// vPIC's VehicleType spelling: "PASSENGER CAR", "MULTIPURPOSE PASSENGER VEHICLE (MPV)", "TRUCK "
// (vPIC's trailing space included), "BUS", "MOTORCYCLE", "INCOMPLETE VEHICLE".
std::string_view VehicleTypeName(VehicleClass vehicle_class);

// True for the classes bound by the position-7 model-year rule: cars, MPVs, light trucks.
bool UsesPosition7Rule(VehicleClass vehicle_class);

}  // namespace fusebox::vpic_sim
