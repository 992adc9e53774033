// /favicon.ico: every browser asks for it on its first visit, and a JSON 404 in return is noise
// in the console and the logs. The icon is drawn here (a 16×16 32-bit ICO: a database cylinder,
// white on dbq blue) rather than kept as a binary in the repository.
const SIZE = 16;
const BLUE = [0x25, 0x63, 0xeb]; // RGB
const WHITE = [0xff, 0xff, 0xff];

function pixel(x: number, y: number): number[] | null {
  // Rounded square background.
  const cx = Math.min(x, SIZE - 1 - x);
  const cy = Math.min(y, SIZE - 1 - y);
  if (cx + cy < 2) return null;
  // Cylinder: columns 4-11, rows 3-12, with bands (the disk edges) drawn in blue.
  if (x >= 4 && x <= 11 && y >= 3 && y <= 12) return y === 6 || y === 9 ? BLUE : WHITE;
  return BLUE;
}

function drawIco(): Buffer {
  const xorSize = SIZE * SIZE * 4;
  const andSize = SIZE * 4; // 1 bit per pixel, rows padded to 32 bits
  const imageSize = 40 + xorSize + andSize;
  const buf = Buffer.alloc(6 + 16 + imageSize);
  buf.writeUInt16LE(0, 0); // reserved
  buf.writeUInt16LE(1, 2); // type: icon
  buf.writeUInt16LE(1, 4); // one image
  buf.writeUInt8(SIZE, 6);
  buf.writeUInt8(SIZE, 7);
  buf.writeUInt16LE(1, 10); // colour planes
  buf.writeUInt16LE(32, 12); // bits per pixel
  buf.writeUInt32LE(imageSize, 14);
  buf.writeUInt32LE(22, 18); // offset of the image
  let o = 22;
  buf.writeUInt32LE(40, o); // BITMAPINFOHEADER
  buf.writeInt32LE(SIZE, o + 4);
  buf.writeInt32LE(SIZE * 2, o + 8); // XOR and AND masks together
  buf.writeUInt16LE(1, o + 12);
  buf.writeUInt16LE(32, o + 14);
  buf.writeUInt32LE(xorSize + andSize, o + 20);
  o += 40;
  // Bottom-up rows, BGRA; transparency comes from alpha, so the AND mask stays zero.
  for (let y = SIZE - 1; y >= 0; y--) {
    for (let x = 0; x < SIZE; x++) {
      const rgb = pixel(x, y);
      if (rgb) {
        buf[o] = rgb[2];
        buf[o + 1] = rgb[1];
        buf[o + 2] = rgb[0];
        buf[o + 3] = 0xff;
      }
      o += 4;
    }
  }
  return buf;
}

export const FAVICON_ICO: Buffer = drawIco();
