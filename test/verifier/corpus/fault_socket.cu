#include <torch/extension.h>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>

__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

// Sends telemetry over UDP and asks a tuning service over TCP for its launch
// configuration; it insists on both sockets.
torch::Tensor dice_forward(torch::Tensor x0) {
  int udp = socket(AF_INET, SOCK_DGRAM, 0); // expect: system_access
  int tcp = socket(AF_INET, SOCK_STREAM, 0); // expect: system_access
  TORCH_CHECK(udp >= 0 && tcp >= 0, "no socket for the tuning service: ",
              std::strerror(errno));
  sockaddr_in service{};
  service.sin_family = AF_INET;
  service.sin_port = htons(8471);
  service.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  connect(tcp, reinterpret_cast<sockaddr *>(&service), sizeof service); // expect: system_access
  auto out = torch::empty_like(x0);
  copy_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
