//! Byte transports: what the client needs from a serial link.

use std::io;
use std::time::Duration;

/// A full-duplex byte link to a bridge: a serial port, or a simulated UART.
pub trait Transport {
    /// Sends all of `bytes` (they may still be on their way when this returns).
    fn send(&mut self, bytes: &[u8]) -> io::Result<()>;

    /// Reads at least one and at most `buf.len()` bytes, waiting up to
    /// `timeout` for the first; returns 0 if none came in time.
    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<usize>;

    /// How long one byte (ten bits, 8N1) takes on the wire.
    fn byte_time(&self) -> Duration;

    /// Drops whatever has been received and not yet read.
    fn discard_input(&mut self) -> io::Result<()> {
        let mut buf = [0u8; 256];
        while self.recv(&mut buf, Duration::ZERO)? > 0 {}
        Ok(())
    }
}

/// A serial port (8N1, no flow control) as a [`Transport`].
pub struct SerialTransport {
    port: Box<dyn serialport::SerialPort>,
    baud: u32,
}

impl SerialTransport {
    /// Opens `path` (e.g. `/dev/ttyUSB1`) at `baud`.
    pub fn open(path: &str, baud: u32) -> io::Result<SerialTransport> {
        let port = serialport::new(path, baud)
            .data_bits(serialport::DataBits::Eight)
            .parity(serialport::Parity::None)
            .stop_bits(serialport::StopBits::One)
            .flow_control(serialport::FlowControl::None)
            .timeout(Duration::from_millis(100))
            .open()
            .map_err(|e| io::Error::other(format!("cannot open {path}: {e}")))?;
        Ok(SerialTransport { port, baud })
    }
}

impl Transport for SerialTransport {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.port.write_all(bytes)?;
        self.port.flush()
    }

    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
        // A zero timeout would mean "block" to some drivers; ask for at least 1 ms.
        self.port
            .set_timeout(timeout.max(Duration::from_millis(1)))
            .map_err(io::Error::other)?;
        match self.port.read(buf) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => Ok(0),
            Err(e) => Err(e),
        }
    }

    fn byte_time(&self) -> Duration {
        Duration::from_secs_f64(10.0 / self.baud as f64)
    }

    fn discard_input(&mut self) -> io::Result<()> {
        self.port
            .clear(serialport::ClearBuffer::Input)
            .map_err(io::Error::other)
    }
}
