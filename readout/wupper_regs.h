/* SPDX-License-Identifier: BSD-3-Clause */
/* wupper_regs.h — BAR0 register map of the Wupper PCIe DMA core (ToHost
 * "endless DMA"), register map v1.0. 128-bit register slots, accessed as
 * 64-bit halves. See readout/README.md for the semantics. */
#ifndef RCI_WUPPER_REGS_H
#define RCI_WUPPER_REGS_H
#include <stdint.h>

#define WUPPER_MAX_DESCRIPTORS 8u

/* DMA_DESC_n: START_ADDRESS [63:0], END_ADDRESS [127:64] */
#define WUPPER_DESC(n)              (0x0000u + 0x20u * (n))
#define WUPPER_DESC_START(n)        (WUPPER_DESC(n) + 0x00u)
#define WUPPER_DESC_END(n)          (WUPPER_DESC(n) + 0x08u)
/* DMA_DESC_n a: NUM_WORDS [10:0], READ_WRITE [11], WRAP_AROUND [12]; RD_POINTER [127:64] */
#define WUPPER_DESC_CTRL(n)         (WUPPER_DESC(n) + 0x10u)
#define WUPPER_DESC_RD_POINTER(n)   (WUPPER_DESC(n) + 0x18u)
#define WUPPER_CTRL_NUM_WORDS_MASK  0x7ffull
#define WUPPER_CTRL_READ_WRITE      (1ull << 11)   /* 1 = FromHost, 0 = ToHost */
#define WUPPER_CTRL_WRAP_AROUND     (1ull << 12)

/* DMA_DESC_STATUS_n: CURRENT_ADDRESS [63:0], DESC_DONE [64], EVEN_DMA [65], EVEN_PC [66] */
#define WUPPER_STATUS(n)            (0x0200u + 0x10u * (n))
#define WUPPER_STATUS_CURRENT(n)    (WUPPER_STATUS(n) + 0x00u)
#define WUPPER_STATUS_BITS(n)       (WUPPER_STATUS(n) + 0x08u)
#define WUPPER_STATUS_DESC_DONE     (1ull << 0)    /* bit 64 of the 128-bit register */
#define WUPPER_STATUS_EVEN_DMA      (1ull << 1)    /* bit 65 */
#define WUPPER_STATUS_EVEN_PC       (1ull << 2)    /* bit 66 */

#define WUPPER_DESC_ENABLE          0x0400u        /* one bit per descriptor [7:0] */
#define WUPPER_FIFO_FLUSH           0x0410u
#define WUPPER_DMA_RESET            0x0420u

#define WUPPER_BAR0_SIZE            0x1000u        /* the part of BAR0 we use */
#endif
