/*
 * fwd_fast_obj.S - the compiled BPF object of lib/fwd/bpf/fwd_fast.c, embedded
 * so that cats-fwd needs no file beside it (CATS_FP_OBJ names the object).
 */
	.section .rodata
	.balign 8
	.globl cats_fp_obj
	.globl cats_fp_obj_end
cats_fp_obj:
	.incbin CATS_FP_OBJ
cats_fp_obj_end:
	.section .note.GNU-stack,"",@progbits
