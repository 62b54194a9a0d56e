// Wire frames between controller and model workers (comms/frame.h): header
// checks, then the Envelope body, with or without an attachment.
#include "comms/frame.h"
#include "comms/proto/runtime.pb.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  troupe::wire::Envelope envelope;
  size_t attachment = 0;
  if (troupe::DecodeFrame(data, size, 1 << 20, &envelope, &attachment) == troupe::FrameStatus::kOk &&
      attachment > size) {
    __builtin_trap();  // an attachment must lie inside the frame
  }
  troupe::DecodeFrame(data, size, 1 << 20, &envelope);
  return 0;
}
