#include "wmi_table.h"

#include <array>

namespace fusebox::vpic_sim {
namespace {

constexpr VehicleClass kCar = VehicleClass::kPassengerCar;
constexpr VehicleClass kMpv = VehicleClass::kMpv;
constexpr VehicleClass kLightTruck = VehicleClass::kLightTruck;
constexpr VehicleClass kHeavyTruck = VehicleClass::kHeavyTruck;
constexpr VehicleClass kBus = VehicleClass::kBus;
constexpr VehicleClass kMotorcycle = VehicleClass::kMotorcycle;
constexpr VehicleClass kIncomplete = VehicleClass::kIncomplete;

constexpr std::string_view kAmGeneral = "AM GENERAL LLC";
constexpr std::string_view kHondaAmerica = "HONDA OF AMERICA MFG., INC.";
constexpr std::string_view kHondaAlabama = "HONDA MANUFACTURING OF ALABAMA, LLC";
constexpr std::string_view kHondaCanada = "HONDA OF CANADA MFG., INC.";
constexpr std::string_view kHondaMexico = "HONDA DE MEXICO";
constexpr std::string_view kHondaJapan = "HONDA MOTOR CO., LTD.";
constexpr std::string_view kChrysler = "CHRYSLER CORPORATION";
constexpr std::string_view kDaimlerChrysler = "DAIMLERCHRYSLER CORPORATION";
constexpr std::string_view kChryslerGroup = "CHRYSLER GROUP LLC";
constexpr std::string_view kFcaUs = "FCA US LLC";
constexpr std::string_view kChryslerCanada = "CHRYSLER CANADA INC.";
constexpr std::string_view kFcaMexico = "FCA MEXICO, S.A. DE C.V.";
constexpr std::string_view kFcaItaly = "FCA ITALY S.P.A.";
constexpr std::string_view kFordUsa = "FORD MOTOR COMPANY, USA";
constexpr std::string_view kFordCanada = "FORD MOTOR COMPANY OF CANADA, LTD.";
constexpr std::string_view kFordMexico = "FORD MOTOR COMPANY, MEXICO";
constexpr std::string_view kAutoAlliance = "AUTOALLIANCE INTERNATIONAL, INC.";
constexpr std::string_view kDaimlerTrucks = "DAIMLER TRUCKS NORTH AMERICA LLC";
constexpr std::string_view kGm = "GENERAL MOTORS LLC";
constexpr std::string_view kGmCanada = "GENERAL MOTORS OF CANADA COMPANY";
constexpr std::string_view kGmMexico = "GENERAL MOTORS DE MEXICO, S. DE R.L. DE C.V.";
constexpr std::string_view kGmKorea = "GM KOREA COMPANY";
constexpr std::string_view kOpel = "ADAM OPEL AG";
constexpr std::string_view kNissanNa = "NISSAN NORTH AMERICA, INC.";
constexpr std::string_view kNissanMexico = "NISSAN MEXICANA, S.A. DE C.V.";
constexpr std::string_view kNissanJapan = "NISSAN MOTOR CO., LTD.";
constexpr std::string_view kToyotaKentucky = "TOYOTA MOTOR MANUFACTURING, KENTUCKY, INC.";
constexpr std::string_view kToyotaIndiana = "TOYOTA MOTOR MANUFACTURING, INDIANA, INC.";
constexpr std::string_view kToyotaTexas = "TOYOTA MOTOR MANUFACTURING, TEXAS, INC.";
constexpr std::string_view kToyotaCanada = "TOYOTA MOTOR MANUFACTURING CANADA, INC.";
constexpr std::string_view kToyotaMexico = "TOYOTA MOTOR MANUFACTURING DE BAJA CALIFORNIA";
constexpr std::string_view kToyotaJapan = "TOYOTA MOTOR CORPORATION";
constexpr std::string_view kToyotaFrance = "TOYOTA MOTOR MANUFACTURING FRANCE";
constexpr std::string_view kNummi = "NEW UNITED MOTOR MANUFACTURING, INC.";
constexpr std::string_view kVwMexico = "VOLKSWAGEN DE MEXICO SA DE CV";
constexpr std::string_view kVwChattanooga =
    "VOLKSWAGEN GROUP OF AMERICA CHATTANOOGA OPERATIONS, LLC";
constexpr std::string_view kVwAg = "VOLKSWAGEN AG";
constexpr std::string_view kAudiAg = "AUDI AG";
constexpr std::string_view kAudiHungaria = "AUDI HUNGARIA ZRT.";
constexpr std::string_view kBmwNa = "BMW MANUFACTURER CORPORATION / BMW NORTH AMERICA";
constexpr std::string_view kBmwAg = "BMW AG";
constexpr std::string_view kBmwM = "BMW M GMBH";
constexpr std::string_view kMercedesUs = "MERCEDES-BENZ U.S. INTERNATIONAL, INC.";
constexpr std::string_view kDaimlerAg = "DAIMLER AG";
constexpr std::string_view kMercedesAg = "MERCEDES-BENZ AG";
constexpr std::string_view kHyundaiUs = "HYUNDAI MOTOR MANUFACTURING ALABAMA, LLC";
constexpr std::string_view kHyundaiKorea = "HYUNDAI MOTOR COMPANY";
constexpr std::string_view kKiaUs = "KIA MOTORS MANUFACTURING GEORGIA, INC.";
constexpr std::string_view kKiaKorea = "KIA MOTORS CORPORATION";
constexpr std::string_view kMazdaJapan = "MAZDA MOTOR CORPORATION";
constexpr std::string_view kMazdaMexico = "MAZDA DE MEXICO VEHICLE OPERATION";
constexpr std::string_view kMitsubishiUs = "MITSUBISHI MOTORS NORTH AMERICA, INC.";
constexpr std::string_view kMitsubishiJapan = "MITSUBISHI MOTORS CORPORATION";
constexpr std::string_view kSubaruUs = "SUBARU OF INDIANA AUTOMOTIVE, INC.";
constexpr std::string_view kSubaruJapan = "SUBARU CORPORATION";
constexpr std::string_view kSuzuki = "SUZUKI MOTOR CORPORATION";
constexpr std::string_view kTesla = "TESLA, INC.";
constexpr std::string_view kVolvoCars = "VOLVO CAR CORPORATION";
constexpr std::string_view kVolvoUs = "VOLVO CAR US OPERATIONS INC.";
constexpr std::string_view kPaccar = "PACCAR INC";
constexpr std::string_view kHarley = "HARLEY-DAVIDSON MOTOR COMPANY";
constexpr std::string_view kPorsche = "DR. ING. H.C.F. PORSCHE AG";

// Sources: the WMIs named in tests/data/vin-vectors.tsv and the recorded vPIC responses, plus
// widely published WMI assignments for makes sold in the U.S.
constexpr std::array kTable = {
    // United States, Canada, Mexico.
    WmiEntry{"137", "", "HUMMER", kAmGeneral, kMpv},
    WmiEntry{"19U", "", "ACURA", kHondaAmerica, kCar},
    WmiEntry{"19V", "", "ACURA", kHondaAmerica, kCar},
    WmiEntry{"19X", "", "HONDA", kHondaAmerica, kCar},
    WmiEntry{"1B3", "", "DODGE", kChrysler, kCar},
    WmiEntry{"1B4", "", "DODGE", kChrysler, kMpv},
    WmiEntry{"1B7", "", "DODGE", kChrysler, kLightTruck},
    WmiEntry{"1C3", "", "CHRYSLER", kFcaUs, kCar},
    WmiEntry{"1C4", "", "JEEP", kFcaUs, kMpv},
    WmiEntry{"1C6", "", "RAM", kFcaUs, kLightTruck},
    WmiEntry{"1D3", "", "DODGE", kDaimlerChrysler, kLightTruck},
    WmiEntry{"1D4", "", "DODGE", kDaimlerChrysler, kMpv},
    WmiEntry{"1D7", "", "DODGE", kChryslerGroup, kLightTruck},
    WmiEntry{"1D8", "", "DODGE", kDaimlerChrysler, kMpv},
    WmiEntry{"1FA", "", "FORD", kFordUsa, kCar},
    WmiEntry{"1FD", "", "FORD", kFordUsa, kIncomplete},
    WmiEntry{"1FM", "", "FORD", kFordUsa, kMpv},
    WmiEntry{"1FT", "", "FORD", kFordUsa, kLightTruck},
    WmiEntry{"1FU", "", "FREIGHTLINER", kDaimlerTrucks, kHeavyTruck},
    WmiEntry{"1FV", "", "FREIGHTLINER", kDaimlerTrucks, kHeavyTruck},
    WmiEntry{"1G1", "", "CHEVROLET", kGm, kCar},
    WmiEntry{"1G2", "", "PONTIAC", kGm, kCar},
    WmiEntry{"1G3", "", "OLDSMOBILE", kGm, kCar},
    WmiEntry{"1G4", "", "BUICK", kGm, kCar},
    WmiEntry{"1G6", "", "CADILLAC", kGm, kCar},
    WmiEntry{"1G8", "", "SATURN", kGm, kCar},
    WmiEntry{"1GB", "", "CHEVROLET", kGm, kIncomplete},
    WmiEntry{"1GC", "", "CHEVROLET", kGm, kLightTruck},
    WmiEntry{"1GK", "", "GMC", kGm, kMpv},
    WmiEntry{"1GM", "", "PONTIAC", kGm, kMpv},
    WmiEntry{"1GN", "", "CHEVROLET", kGm, kMpv},
    WmiEntry{"1GT", "", "GMC", kGm, kLightTruck},
    WmiEntry{"1GY", "", "CADILLAC", kGm, kMpv},
    WmiEntry{"1HD", "", "HARLEY-DAVIDSON", kHarley, kMotorcycle},
    WmiEntry{"1HG", "", "HONDA", kHondaAmerica, kCar},
    WmiEntry{"1HT", "", "INTERNATIONAL", "NAVISTAR, INC.", kHeavyTruck},
    WmiEntry{"1J4", "", "JEEP", kDaimlerChrysler, kMpv},
    WmiEntry{"1J8", "", "JEEP", kDaimlerChrysler, kMpv},
    WmiEntry{"1JC", "", "JEEP", "AMERICAN MOTORS CORPORATION", kMpv},
    WmiEntry{"1LN", "", "LINCOLN", kFordUsa, kCar},
    WmiEntry{"1M1", "", "MACK", "MACK TRUCKS, INC.", kHeavyTruck},
    WmiEntry{"1M8", "", "MCI", "MOTOR COACH INDUSTRIES", kBus},
    WmiEntry{"1ME", "", "MERCURY", kFordUsa, kCar},
    WmiEntry{"1N4", "", "NISSAN", kNissanNa, kCar},
    WmiEntry{"1N6", "", "NISSAN", kNissanNa, kLightTruck},
    WmiEntry{"1NX", "", "TOYOTA", kNummi, kCar},
    WmiEntry{"1VW", "", "VOLKSWAGEN", kVwChattanooga, kCar},
    WmiEntry{"1XK", "", "KENWORTH", kPaccar, kHeavyTruck},
    WmiEntry{"1XP", "", "PETERBILT", kPaccar, kHeavyTruck},
    WmiEntry{"1YV", "", "MAZDA", kAutoAlliance, kCar},
    WmiEntry{"1ZV", "", "FORD", kAutoAlliance, kCar},
    WmiEntry{"2A4", "", "CHRYSLER", kChryslerCanada, kMpv},
    WmiEntry{"2B3", "", "DODGE", kChryslerCanada, kCar},
    WmiEntry{"2C3", "", "DODGE", kChryslerCanada, kCar},
    WmiEntry{"2C4", "", "DODGE", kChryslerCanada, kMpv},
    WmiEntry{"2D4", "", "DODGE", kChryslerCanada, kMpv},
    WmiEntry{"2D8", "", "DODGE", kChryslerCanada, kMpv},
    WmiEntry{"2FA", "", "FORD", kFordCanada, kCar},
    WmiEntry{"2FM", "", "FORD", kFordCanada, kMpv},
    WmiEntry{"2FT", "", "FORD", kFordCanada, kLightTruck},
    WmiEntry{"2G1", "", "CHEVROLET", kGmCanada, kCar},
    WmiEntry{"2G4", "", "BUICK", kGmCanada, kCar},
    WmiEntry{"2G6", "", "CADILLAC", kGmCanada, kCar},
    WmiEntry{"2GC", "", "CHEVROLET", kGmCanada, kLightTruck},
    WmiEntry{"2GN", "", "CHEVROLET", kGmCanada, kMpv},
    WmiEntry{"2HG", "", "HONDA", kHondaCanada, kCar},
    WmiEntry{"2HK", "", "HONDA", kHondaCanada, kMpv},
    WmiEntry{"2HN", "", "ACURA", kHondaCanada, kMpv},
    WmiEntry{"2LM", "", "LINCOLN", kFordCanada, kMpv},
    WmiEntry{"2ME", "", "MERCURY", kFordCanada, kCar},
    WmiEntry{"2T1", "", "TOYOTA", kToyotaCanada, kCar},
    WmiEntry{"2T2", "", "LEXUS", kToyotaCanada, kMpv},
    WmiEntry{"2T3", "", "TOYOTA", kToyotaCanada, kMpv},
    WmiEntry{"3AK", "", "FREIGHTLINER", kDaimlerTrucks, kHeavyTruck},
    WmiEntry{"3C3", "", "FIAT", kFcaMexico, kCar},
    WmiEntry{"3C4", "", "DODGE", kFcaMexico, kMpv},
    WmiEntry{"3C6", "", "RAM", kFcaMexico, kLightTruck},
    WmiEntry{"3CZ", "", "HONDA", kHondaMexico, kMpv},
    WmiEntry{"3D4", "", "DODGE", kChryslerGroup, kMpv},
    WmiEntry{"3D7", "", "DODGE", kChryslerGroup, kLightTruck},
    WmiEntry{"3FA", "", "FORD", kFordMexico, kCar},
    WmiEntry{"3G1", "", "CHEVROLET", kGmMexico, kCar},
    WmiEntry{"3GC", "", "CHEVROLET", kGmMexico, kLightTruck},
    WmiEntry{"3GN", "", "CHEVROLET", kGmMexico, kMpv},
    WmiEntry{"3GY", "", "CADILLAC", kGmMexico, kMpv},
    WmiEntry{"3LN", "", "LINCOLN", kFordMexico, kCar},
    WmiEntry{"3MZ", "", "MAZDA", kMazdaMexico, kCar},
    WmiEntry{"3N1", "", "NISSAN", kNissanMexico, kCar},
    WmiEntry{"3TM", "", "TOYOTA", kToyotaMexico, kLightTruck},
    WmiEntry{"3VV", "", "VOLKSWAGEN", kVwMexico, kMpv},
    WmiEntry{"3VW", "", "VOLKSWAGEN", kVwMexico, kCar},
    WmiEntry{"4A3", "", "MITSUBISHI", kMitsubishiUs, kCar},
    WmiEntry{"4A4", "", "MITSUBISHI", kMitsubishiUs, kMpv},
    WmiEntry{"4F2", "", "MAZDA", kFordUsa, kMpv},
    WmiEntry{"4JG", "", "MERCEDES-BENZ", kMercedesUs, kMpv},
    WmiEntry{"4M2", "", "MERCURY", kFordUsa, kMpv},
    WmiEntry{"4S3", "", "SUBARU", kSubaruUs, kCar},
    WmiEntry{"4S4", "", "SUBARU", kSubaruUs, kMpv},
    WmiEntry{"4T1", "", "TOYOTA", kToyotaKentucky, kCar},
    WmiEntry{"4T3", "", "TOYOTA", kToyotaKentucky, kMpv},
    WmiEntry{"4US", "", "BMW", kBmwNa, kCar},
    WmiEntry{"4UZ", "", "FREIGHTLINER", "FREIGHTLINER CUSTOM CHASSIS CORPORATION", kIncomplete},
    WmiEntry{"4V4", "", "VOLVO TRUCK", "VOLVO TRUCKS NORTH AMERICA", kHeavyTruck},
    WmiEntry{"55S", "", "MERCEDES-BENZ", kDaimlerAg, kCar},
    WmiEntry{"58A", "", "LEXUS", kToyotaKentucky, kCar},
    WmiEntry{"5FN", "", "HONDA", kHondaAlabama, kMpv},
    WmiEntry{"5FR", "", "ACURA", kHondaAlabama, kMpv},
    WmiEntry{"5GA", "", "BUICK", kGm, kMpv},
    WmiEntry{"5GN", "", "HUMMER", kGm, kMpv},
    WmiEntry{"5GR", "", "HUMMER", kGm, kMpv},
    WmiEntry{"5HD", "", "HARLEY-DAVIDSON", kHarley, kMotorcycle},
    WmiEntry{"5J6", "", "HONDA", kHondaAmerica, kMpv},
    WmiEntry{"5J8", "", "ACURA", kHondaAmerica, kMpv},
    WmiEntry{"5LM", "", "LINCOLN", kFordUsa, kMpv},
    WmiEntry{"5N1", "", "NISSAN", kNissanNa, kMpv},
    WmiEntry{"5N3", "", "INFINITI", kNissanNa, kMpv},
    WmiEntry{"5NM", "", "HYUNDAI", kHyundaiUs, kMpv},
    WmiEntry{"5NP", "", "HYUNDAI", kHyundaiUs, kCar},
    WmiEntry{"5TD", "", "TOYOTA", kToyotaIndiana, kMpv},
    WmiEntry{"5TE", "", "TOYOTA", kNummi, kLightTruck},
    WmiEntry{"5TF", "", "TOYOTA", kToyotaTexas, kLightTruck},
    WmiEntry{"5UM", "", "BMW", kBmwNa, kCar},
    WmiEntry{"5UX", "", "BMW", kBmwNa, kMpv},
    WmiEntry{"5XX", "", "KIA", kKiaUs, kCar},
    WmiEntry{"5XY", "", "KIA", kKiaUs, kMpv},
    WmiEntry{"5YF", "", "TOYOTA", kToyotaKentucky, kCar},
    WmiEntry{"5YJ", "", "TESLA", kTesla, kCar},
    WmiEntry{"5YM", "", "BMW", kBmwNa, kMpv},
    WmiEntry{"7JR", "", "VOLVO", kVolvoUs, kCar},
    WmiEntry{"7SA", "", "TESLA", kTesla, kMpv},
    // Japan.
    WmiEntry{"JA3", "", "MITSUBISHI", kMitsubishiJapan, kCar},
    WmiEntry{"JA4", "", "MITSUBISHI", kMitsubishiJapan, kMpv},
    WmiEntry{"JF1", "", "SUBARU", kSubaruJapan, kCar},
    WmiEntry{"JF2", "", "SUBARU", kSubaruJapan, kMpv},
    WmiEntry{"JH2", "", "HONDA", kHondaJapan, kMotorcycle},
    WmiEntry{"JH4", "", "ACURA", kHondaJapan, kCar},
    WmiEntry{"JHL", "", "HONDA", kHondaJapan, kMpv},
    WmiEntry{"JHM", "", "HONDA", kHondaJapan, kCar},
    WmiEntry{"JKA", "", "KAWASAKI", "KAWASAKI MOTORS CORP., U.S.A.", kMotorcycle},
    WmiEntry{"JM1", "", "MAZDA", kMazdaJapan, kCar},
    WmiEntry{"JM3", "", "MAZDA", kMazdaJapan, kMpv},
    WmiEntry{"JN1", "", "NISSAN", kNissanJapan, kCar},
    WmiEntry{"JN8", "", "NISSAN", kNissanJapan, kMpv},
    WmiEntry{"JNK", "", "INFINITI", kNissanJapan, kCar},
    WmiEntry{"JNR", "", "INFINITI", kNissanJapan, kMpv},
    WmiEntry{"JS1", "", "SUZUKI", kSuzuki, kMotorcycle},
    WmiEntry{"JS2", "", "SUZUKI", kSuzuki, kCar},
    WmiEntry{"JS3", "", "SUZUKI", kSuzuki, kMpv},
    WmiEntry{"JSA", "", "SUZUKI", kSuzuki, kMpv},
    WmiEntry{"JT2", "", "TOYOTA", kToyotaJapan, kCar},
    WmiEntry{"JT3", "", "TOYOTA", kToyotaJapan, kMpv},
    WmiEntry{"JT4", "", "TOYOTA", kToyotaJapan, kLightTruck},
    WmiEntry{"JTD", "", "TOYOTA", kToyotaJapan, kCar},
    WmiEntry{"JTE", "", "TOYOTA", kToyotaJapan, kMpv},
    WmiEntry{"JTH", "", "LEXUS", kToyotaJapan, kCar},
    WmiEntry{"JTJ", "", "LEXUS", kToyotaJapan, kMpv},
    WmiEntry{"JTK", "", "SCION", kToyotaJapan, kCar},
    WmiEntry{"JTM", "", "TOYOTA", kToyotaJapan, kMpv},
    WmiEntry{"JTN", "", "TOYOTA", kToyotaJapan, kCar},
    WmiEntry{"JYA", "", "YAMAHA", "YAMAHA MOTOR CO., LTD.", kMotorcycle},
    // Korea.
    WmiEntry{"KL1", "", "CHEVROLET", kGmKorea, kCar},
    WmiEntry{"KL4", "", "BUICK", kGmKorea, kMpv},
    WmiEntry{"KL7", "", "CHEVROLET", kGmKorea, kMpv},
    WmiEntry{"KM8", "", "HYUNDAI", kHyundaiKorea, kMpv},
    WmiEntry{"KMH", "", "HYUNDAI", kHyundaiKorea, kCar},
    WmiEntry{"KMT", "", "GENESIS", "GENESIS MOTOR, LLC", kCar},
    WmiEntry{"KNA", "", "KIA", kKiaKorea, kCar},
    WmiEntry{"KND", "", "KIA", kKiaKorea, kMpv},
    WmiEntry{"KNM", "", "NISSAN", "RENAULT SAMSUNG MOTORS CO., LTD.", kMpv},
    // Europe.
    WmiEntry{"SAJ", "", "JAGUAR", "JAGUAR LAND ROVER LIMITED", kCar},
    WmiEntry{"SAL", "", "LAND ROVER", "JAGUAR LAND ROVER LIMITED", kMpv},
    WmiEntry{"SBM", "", "MCLAREN", "MCLAREN AUTOMOTIVE LIMITED", kCar},
    WmiEntry{"SCA", "", "ROLLS-ROYCE", "ROLLS-ROYCE MOTOR CARS LIMITED", kCar},
    WmiEntry{"SCB", "", "BENTLEY", "BENTLEY MOTORS LIMITED", kCar},
    WmiEntry{"SCC", "", "LOTUS", "LOTUS CARS LIMITED", kCar},
    WmiEntry{"SCF", "", "ASTON MARTIN", "ASTON MARTIN LAGONDA LIMITED", kCar},
    WmiEntry{"SHH", "", "HONDA", "HONDA OF THE UK MANUFACTURING LTD.", kCar},
    WmiEntry{"SHS", "", "HONDA", "HONDA OF THE UK MANUFACTURING LTD.", kMpv},
    WmiEntry{"SMT", "", "TRIUMPH", "TRIUMPH MOTORCYCLES LTD.", kMotorcycle},
    WmiEntry{"TRU", "", "AUDI", kAudiHungaria, kCar},
    WmiEntry{"VNK", "", "TOYOTA", kToyotaFrance, kCar},
    WmiEntry{"W04", "", "BUICK", kOpel, kCar},
    WmiEntry{"W06", "", "CADILLAC", kOpel, kCar},
    WmiEntry{"W1K", "", "MERCEDES-BENZ", kMercedesAg, kCar},
    WmiEntry{"W1N", "", "MERCEDES-BENZ", kMercedesAg, kMpv},
    WmiEntry{"WA1", "", "AUDI", kAudiAg, kMpv},
    WmiEntry{"WAU", "", "AUDI", kAudiAg, kCar},
    WmiEntry{"WBA", "", "BMW", kBmwAg, kCar},
    WmiEntry{"WBS", "", "BMW", kBmwM, kCar},
    WmiEntry{"WBX", "", "BMW", kBmwAg, kMpv},
    WmiEntry{"WBY", "", "BMW", kBmwAg, kCar},
    WmiEntry{"WDB", "", "MERCEDES-BENZ", kDaimlerAg, kCar},
    WmiEntry{"WDC", "", "MERCEDES-BENZ", kDaimlerAg, kMpv},
    WmiEntry{"WDD", "", "MERCEDES-BENZ", kDaimlerAg, kCar},
    WmiEntry{"WME", "", "SMART", kDaimlerAg, kCar},
    WmiEntry{"WMW", "", "MINI", kBmwAg, kCar},
    WmiEntry{"WP0", "", "PORSCHE", kPorsche, kCar},
    WmiEntry{"WP1", "", "PORSCHE", kPorsche, kMpv},
    WmiEntry{"WUA", "", "AUDI", "AUDI SPORT GMBH", kCar},
    WmiEntry{"WVG", "", "VOLKSWAGEN", kVwAg, kMpv},
    WmiEntry{"WVW", "", "VOLKSWAGEN", kVwAg, kCar},
    WmiEntry{"YS3", "", "SAAB", "SAAB AUTOMOBILE AB", kCar},
    WmiEntry{"YT9", "007", "KOENIGSEGG", "KOENIGSEGG AUTOMOTIVE AB", kCar},
    WmiEntry{"YV1", "", "VOLVO", kVolvoCars, kCar},
    WmiEntry{"YV4", "", "VOLVO", kVolvoCars, kMpv},
    WmiEntry{"ZAC", "", "JEEP", kFcaItaly, kMpv},
    WmiEntry{"ZAM", "", "MASERATI", "MASERATI S.P.A.", kCar},
    WmiEntry{"ZAR", "", "ALFA ROMEO", kFcaItaly, kCar},
    WmiEntry{"ZDM", "", "DUCATI", "DUCATI MOTOR HOLDING S.P.A.", kMotorcycle},
    WmiEntry{"ZFA", "", "FIAT", kFcaItaly, kCar},
    WmiEntry{"ZFF", "", "FERRARI", "FERRARI S.P.A.", kCar},
    WmiEntry{"ZHW", "", "LAMBORGHINI", "AUTOMOBILI LAMBORGHINI S.P.A.", kCar},
};

}  // namespace

std::span<const WmiEntry> WmiTable() { return kTable; }

const WmiEntry* FindWmi(std::string_view vin) {
  if (vin.size() < 3) {
    return nullptr;
  }
  const std::string_view wmi = vin.substr(0, 3);
  const bool small_maker = wmi[2] == '9';
  if (small_maker && vin.size() < 14) {
    return nullptr;
  }
  const std::string_view maker = small_maker ? vin.substr(11, 3) : std::string_view();
  for (const WmiEntry& entry : kTable) {
    if (entry.wmi == wmi && entry.small_maker == maker) {
      return &entry;
    }
  }
  return nullptr;
}

std::string_view VehicleTypeName(VehicleClass vehicle_class) {
  switch (vehicle_class) {
    case VehicleClass::kPassengerCar:
      return "PASSENGER CAR";
    case VehicleClass::kMpv:
      return "MULTIPURPOSE PASSENGER VEHICLE (MPV)";
    case VehicleClass::kLightTruck:
    case VehicleClass::kHeavyTruck:
      return "TRUCK ";
    case VehicleClass::kBus:
      return "BUS";
    case VehicleClass::kMotorcycle:
      return "MOTORCYCLE";
    case VehicleClass::kIncomplete:
      return "INCOMPLETE VEHICLE";
  }
  return "";
}

bool UsesPosition7Rule(VehicleClass vehicle_class) {
  return vehicle_class == VehicleClass::kPassengerCar || vehicle_class == VehicleClass::kMpv ||
         vehicle_class == VehicleClass::kLightTruck;
}

}  // namespace fusebox::vpic_sim
