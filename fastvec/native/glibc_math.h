/* glibc_math.h: sin, cos and pow(x, 2) in double precision that return glibc's bits (libm 2.28 and
 * later, the FMA build that x86-64 CPUs with FMA run), on the CPU and on the GPU.
 *
 * Why: Gymnasium's classic-control envs call libm through NumPy (np.sin, np.cos, float64 ** 2) and
 * Python's math module, and glibc's sin, cos and pow are not correctly rounded (about 0.1% of their
 * results are 1 ulp off the true value's rounding). Acrobot and CartPole amplify a 1-ulp difference
 * until whole trajectories differ, so fastvec's envs reproduce Gymnasium only with the same roundings.
 * These are glibc's algorithms (IBM's table-driven sin/cos; optimized-routines' pow), written out
 * with an explicit fma() wherever glibc's FMA build fuses a multiply and an add, so the operations and
 * their roundings are the same on every target (CPU builds use -ffp-contract=off, nvcc --fmad=false;
 * a CPU without FMA instructions runs libm's fma(), correct but slower).
 * Tables: sin and cos of i/128 as double-double, exp's 2^(i/128), pow's log(c), all rounded from exact
 * values (tests/native/test_glibc_math.py regenerates them); pow's 128 divisors c are glibc's choice.
 * Ranges: sin/cos match for |x| < 105414350 (beyond, the CPU calls libm, which is glibc's on glibc
 * systems, and the GPU CUDA's sin/cos, a few ulp apart); fv_pow2 matches for 2^-250 <= |x| <= 2^250
 * and returns x * x outside (exact for 0, inf and NaN; correctly rounded elsewhere). */
#ifndef FASTVEC_GLIBC_MATH_H
#define FASTVEC_GLIBC_MATH_H
#include "fastvec.h"

#ifdef __CUDACC__
#define FVM_TABLE static __device__ const
#else
#define FVM_TABLE static const
#endif

FV_FN fv_u64 fvm_bits(double x) {
#ifdef __CUDACC__
    return (fv_u64)__double_as_longlong(x);
#else
    fv_u64 u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

FV_FN double fvm_double(fv_u64 u) {
#ifdef __CUDACC__
    return __longlong_as_double((long long)u);
#else
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

/* sin/cos: Taylor-like polynomial coefficients, the table's rounding constant and pi/2 in parts. */
#define FVM_S1 -0x1.5555555555555p-3
#define FVM_S2 0x1.1111111110ecep-7
#define FVM_S3 -0x1.a01a019db08b8p-13
#define FVM_S4 0x1.71de27b9a7ed9p-19
#define FVM_S5 -0x1.addffc2fcdf59p-26
#define FVM_SN3 -0x1.5555555555515p-3
#define FVM_SN5 0x1.11110e829872fp-7
#define FVM_CS2 0x1.0000000000000p-1
#define FVM_CS4 -0x1.5555555555535p-5
#define FVM_CS6 0x1.6c16bedd9e239p-10
#define FVM_BIG 0x1.8p45 /* adding it rounds |x| to a multiple of 1/128, the table's step */
#define FVM_HP0 0x1.921fb54442d18p+0 /* pi/2 = HP0 + HP1 to 106 bits */
#define FVM_HP1 0x1.1a62633145c07p-54
#define FVM_MP1 0x1.921fb58000000p+0 /* pi/2 = MP1 + MP2 + PP3 + PP4 to 136 bits */
#define FVM_MP2 -0x1.dde973c000000p-27
#define FVM_PP3 -0x1.cb3b398000000p-55
#define FVM_PP4 -0x1.d747f23e32ed7p-83
#define FVM_HPINV 0x1.45f306dc9c883p-1 /* 2 / pi */
#define FVM_TOINT 0x1.8p52

/* sin(i / 128) and cos(i / 128) for i = 0..109, each as a high double and the rounded rest. */
FVM_TABLE double fvm_sincos_table[440] = {
    0x0p+0, 0x0p+0, 0x1.0000000000000p+0, 0x0p+0, 0x1.fffeaaaaeeeefp-8, -0x1.e45e2ec67b77cp-62, 0x1.fffc000155552p-1, 0x1.f4a01a0196daep-55,
    0x1.fffaaaaeeeed5p-7, -0x1.2ab639a9f0776p-63, 0x1.fff000155549fp-1, 0x1.28a28a03a5ef3p-55, 0x1.7ff7001033255p-6, 0x1.efe2b51527336p-64, 0x1.ffdc006bff7e6p-1, 0x1.ae6dae86977bdp-55,
    0x1.ffeaaaeeee86fp-6, -0x1.cd406fb224ae2p-60, 0x1.ffc00155527d3p-1, -0x1.3b54492d89b5bp-55, 0x1.3feb2b12d45d5p-5, 0x1.4ec54203d1c11p-60, 0x1.ff9c03414a7bap-1, 0x1.991f4be6c59bfp-57,
    0x1.7fdc01032fba9p-5, -0x1.599bdf46e997ap-59, 0x1.ff7006bfdf99fp-1, -0x1.8b3b560648d5fp-56, 0x1.bfc6d78586dacp-5, 0x1.8e4fd03dbf236p-62, 0x1.ff3c0c8103a31p-1, 0x1.4856dbddc0e66p-56,
    0x1.ffaaaeeed4edbp-5, -0x1.2d16d32684b69p-59, 0x1.ff0015549f4d3p-1, 0x1.328387b99426fp-55, 0x1.1fc343d808befp-4, -0x1.f3d32e6f3be4fp-58, 0x1.febc222a8ef9fp-1, 0x1.7934934f54c77p-58,
    0x1.3facb12d1755bp-4, -0x1.921915299468bp-58, 0x1.fe7034129ef6fp-1, -0x1.cbf4337c96f97p-57, 0x1.5f911fd10b737p-4, -0x1.0184f02be9102p-58, 0x1.fe1c4c3c873ebp-1, -0x1.5a9c9057c4a02p-60,
    0x1.7f701032550e4p-4, 0x1.afc2d1800501ap-60, 0x1.fdc06bf7e6b9bp-1, 0x1.31902b535f8dbp-55, 0x1.9f4902d55d1f9p-4, 0x1.2696d7eac1dc1p-58, 0x1.fd5c94b43e000p-1, -0x1.2e768cb4f92f9p-57,
    0x1.bf1b78568391dp-4, 0x1.e91841dea4cc8p-58, 0x1.fcf0c800e99b1p-1, 0x1.ea3d786d186acp-57, 0x1.dee6f16c1cce6p-4, -0x1.50f8e2fb71673p-59, 0x1.fc7d078d1bc88p-1, 0x1.075d2447db685p-55,
    0x1.feaaeee86ee36p-4, -0x1.afcb2bcc6f03bp-59, 0x1.fc015527d5bd3p-1, 0x1.b68f35094efb8p-55, 0x1.0f3378ddd71d1p-3, 0x1.d8468724f0f9ep-57, 0x1.fb7db2bfe0695p-1, 0x1.21dadf4f65ab1p-55,
    0x1.1f0d3d7afceafp-3, -0x1.6ef95099769a5p-57, 0x1.faf22263c4bd3p-1, -0x1.52ace133a2769p-58, 0x1.2ee285e4ab88fp-3, -0x1.e4d0f05dee058p-57, 0x1.fa5ea641c36f2p-1, 0x1.04da6ed17cc7cp-59,
    0x1.3eb312c5d66cbp-3, 0x1.47d666b66cb91p-57, 0x1.f9c340a7cc428p-1, 0x1.c5b6b063b7462p-55, 0x1.4e7ea4dc5f27bp-3, 0x1.949db2ac072fcp-58, 0x1.f91ff40374d01p-1, -0x1.7d03f4d3a9e4cp-57,
    0x1.5e44fcfa126f3p-3, -0x1.6f443063f89b6p-57, 0x1.f874c2e1eecf6p-1, -0x1.c6514e1332b16p-55, 0x1.6e05dc05a4d4cp-3, -0x1.32c5c8b81c919p-66, 0x1.f7c1afeffde24p-1, -0x1.8f55bc47540b1p-56,
    0x1.7dc102fbaf2b5p-3, 0x1.5ab50e23c97c3p-59, 0x1.f706bdf9ece1cp-1, -0x1.698c80c36dcb4p-55, 0x1.8d7632efaa944p-3, -0x1.20fa262cbb953p-57, 0x1.f643efeb82acdp-1, 0x1.6b00ac1fe28acp-56,
    0x1.9d252d0cec312p-3, 0x1.9c43d80b1137dp-58, 0x1.f57948cff6797p-1, 0x1.e3a0d3e03b1d4p-57, 0x1.accdb297a0765p-3, -0x1.9883b57d6cdeap-58, 0x1.f4a6cbd1e3a79p-1, 0x1.13df0edaebb57p-55,
    0x1.bc6f84edc6199p-3, 0x1.9c1a56a7b0cabp-57, 0x1.f3cc7c3b3d16ep-1, -0x1.21a3ad28a3494p-57, 0x1.cc0a6588289a3p-3, -0x1.868d09bc87c6bp-57, 0x1.f2ea5d753ffedp-1, 0x1.cc4215f56d583p-55,
    0x1.db9e15fb5a5d0p-3, -0x1.32e20d6cc6fc2p-57, 0x1.f20073086649fp-1, 0x1.b940416c1984bp-56, 0x1.eb2a57f8ae5a3p-3, -0x1.0be06af572cebp-57, 0x1.f10ec09c5873bp-1, 0x1.d9072762c1283p-55,
    0x1.faaeed4f31577p-3, -0x1.15d88508e32b8p-57, 0x1.f01549f7deea1p-1, 0x1.d3c1e99e5cafdp-55, 0x1.0515cbf65155cp-2, -0x1.9b8c29dfd8ec7p-56, 0x1.ef141300d2f26p-1, -0x1.2aa1b08ded372p-55,
    0x1.0cd00cef36436p-2, -0x1.9fb0a0c93e2b4p-56, 0x1.ee0b1fbc0f11cp-1, -0x1.bfd2380bbc3b1p-59, 0x1.14861aa94ddebp-2, -0x1.be881b5b615a4p-57, 0x1.ecfa744d5efa1p-1, -0x1.56d0a4af541d0p-58,
    0x1.1c37d64c6b876p-2, 0x1.46076fe0dcff4p-56, 0x1.ebe214f76efa8p-1, -0x1.02f9f12ba543ep-55, 0x1.23e52111aaf36p-2, -0x1.4f080334eff18p-56, 0x1.eac2061bbaf4fp-1, 0x1.2c1d53e94658dp-57,
    0x1.2b8ddc43eb49fp-2, 0x1.1553899f2d807p-57, 0x1.e99a4c3a7cd83p-1, -0x1.2264b1bc53ce8p-55, 0x1.3331e94049f87p-2, 0x1.e0cb6b40c302cp-56, 0x1.e86aebf29a9edp-1, 0x1.9397afdbb58a7p-55,
    0x1.3ad129769d3d8p-2, 0x1.03d550487839ap-63, 0x1.e733ea0193d40p-1, -0x1.6428b3546ce13p-55, 0x1.426b7e69ee697p-2, -0x1.f09c75705c59fp-56, 0x1.e5f54b436e9d0p-1, 0x1.7eb0fd02fc8bcp-55,
    0x1.4a00c9b0f3d20p-2, 0x1.823ba6bb08eadp-56, 0x1.e4af14b2a449cp-1, -0x1.68ca02e8a6833p-55, 0x1.5190ecf68a77ap-2, 0x1.b357155eef0f3p-56, 0x1.e3614b680d6a5p-1, -0x1.27793aa015237p-56,
    0x1.591bc9fa2f597p-2, 0x1.7c74bac3fe0cbp-57, 0x1.e20bf49acd6c1p-1, -0x1.660aec7ef636bp-58, 0x1.60a1429078775p-2, 0x1.b1fd80ba89133p-58, 0x1.e0af15a03dbcep-1, 0x1.fe8e702771ae6p-58,
    0x1.682138a38d7f7p-2, -0x1.d889202444aadp-56, 0x1.df4ab3ebd875ep-1, -0x1.e2d8a7e6736c4p-55, 0x1.6f9b8e33a0255p-2, 0x1.42bc14ee9da0dp-56, 0x1.ddded50f228d6p-1, -0x1.e80c8d42ba2bfp-57,
    0x1.7710255764214p-2, -0x1.6ead7314bb6cep-57, 0x1.dc6b7eb995912p-1, 0x1.4b364776dcd35p-58, 0x1.7e7ee03c86d4ep-2, -0x1.b63bcdabf5af2p-56, 0x1.daf0b6b888e83p-1, 0x1.a249e2b5e5ceap-55,
    0x1.85e7a12826949p-2, 0x1.8a40e9b5face0p-56, 0x1.d96e82f71a9dcp-1, 0x1.ff61bd5d2039dp-55, 0x1.8d4a4a774992fp-2, 0x1.44a02ea766326p-56, 0x1.d7e4e97e17b4ap-1, -0x1.3b770352bed94p-57,
    0x1.94a6be9f546c5p-2, -0x1.69ce13e683f58p-56, 0x1.d653f073e4040p-1, -0x1.76236434bec37p-55, 0x1.9bfce02e80510p-2, 0x1.09e39a320b0a4p-56, 0x1.d4bb9e1c619e0p-1, 0x1.f34bb77858f61p-55,
    0x1.a34c91cc50ccap-2, -0x1.a310e3b50cecdp-58, 0x1.d31bf8d8d7c06p-1, 0x1.e60dd3089cbddp-56, 0x1.aa95b63a09277p-2, -0x1.6293eb13c0381p-57, 0x1.d1750727d94f0p-1, 0x1.0d52b1ec1a48ep-55,
    0x1.b1d8305321617p-2, -0x1.ae242cb99f519p-56, 0x1.cfc6cfa52ad9fp-1, 0x1.8b5b5508f2a0dp-55, 0x1.b913e30dbac43p-2, -0x1.e38ad2f6c3ff1p-56, 0x1.ce115909a82e5p-1, 0x1.1f139bb31109ap-55,
    0x1.c048b17b140a3p-2, 0x1.19fe6757e9fa7p-57, 0x1.cc54aa2b2972ep-1, 0x1.4ee162ba83a98p-57, 0x1.c7767ec7fd19ep-2, -0x1.eb14d1a3d5826p-58, 0x1.ca90c9fc67d0bp-1, -0x1.46a81485e3462p-57,
    0x1.ce9d2e3d4a51fp-2, -0x1.2fc8a12dae298p-57, 0x1.c8c5bf8ce1a84p-1, 0x1.ab3d1a1590123p-56, 0x1.d5bca34047661p-2, 0x1.28a44a75fc29cp-56, 0x1.c6f39208be53bp-1, -0x1.741dbfbaadb42p-55,
    0x1.dcd4c15329c9ap-2, 0x1.0d4c6e171fd9ap-56, 0x1.c51a48b8b175ep-1, -0x1.1bbb43b9aa880p-57, 0x1.e3e56c1582a69p-2, -0x1.0a4821099f88fp-58, 0x1.c339eb01ddd81p-1, -0x1.caaf5ee82c5c0p-55,
    0x1.eaee8744b05f0p-2, -0x1.789b43c9b027dp-58, 0x1.c1528065b7d50p-1, -0x1.892111312e828p-55, 0x1.f1eff6bc4f97bp-2, 0x1.17212f8a7525cp-56, 0x1.bf641081e7536p-1, 0x1.b7bd71628a9a1p-55,
    0x1.f8e99e76abc97p-2, 0x1.9d950af2d00a3p-58, 0x1.bd6ea310294f5p-1, 0x1.31bbcc88c109dp-56, 0x1.ffdb628d2f57ap-2, 0x1.f4a992e905b6ap-57, 0x1.bb723fe630f32p-1, 0x1.72bd2452d0a39p-56,
    0x1.0362939c69955p-1, -0x1.2d8cd78397b01p-55, 0x1.b96eeef58840ep-1, 0x1.45a3cc78fade0p-58, 0x1.06d3686946e5bp-1, 0x1.3f5ae4538ff1bp-55, 0x1.b764b84b704c2p-1, -0x1.f5848c21b389bp-55,
    0x1.0a4021e9e1001p-1, -0x1.6f643a13914f6p-55, 0x1.b553a410c104ep-1, 0x1.8ff7947027a15p-58, 0x1.0da8b26b5672ep-1, -0x1.a58def0bee909p-55, 0x1.b33bba89c8948p-1, 0x1.ea6a51d1f6ca9p-55,
    0x1.110d0c4b69c3bp-1, 0x1.d918998809981p-55, 0x1.b11d04162a4c6p-1, 0x1.1dd561efbc0c2p-56, 0x1.146d21f8b7f82p-1, 0x1.bf9535e2739a8p-56, 0x1.aef78930bd275p-1, -0x1.f836279746f94p-56,
    0x1.17c8e5f2eedb0p-1, 0x1.35e57102e2488p-57, 0x1.accb526f69de5p-1, 0x1.8fb6a8dd6b6ccp-55, 0x1.1b204acb02fddp-1, -0x1.f190c70cbb5fep-58, 0x1.aa98688308913p-1, -0x1.b83d607cd5072p-63,
    0x1.1e7343236574cp-1, 0x1.22a3fa4f41d5ap-56, 0x1.a85ed4373e02dp-1, 0x1.9be06385ec792p-57, 0x1.21c1c1b0394cfp-1, 0x1.e5b324b23aa31p-58, 0x1.a61e9e72586afp-1, 0x1.58330e2fd453fp-55,
    0x1.250bb93788bbbp-1, 0x1.ea3d02457bccep-56, 0x1.a3d7d0352bdcfp-1, -0x1.68dbaeca19669p-55, 0x1.28511c917a067p-1, -0x1.01df1d9a16b70p-55, 0x1.a18a729aee445p-1, 0x1.95e25736c0357p-60,
    0x1.2b91dea88421ep-1, -0x1.fa371db216ab0p-55, 0x1.9f368ed912f85p-1, -0x1.1d200c5791606p-55, 0x1.2ecdf279a3082p-1, 0x1.d3557e0e7e37ep-55, 0x1.9cdc2e3f25e5cp-1, 0x1.3f99112993f62p-55,
    0x1.32054b148bc4fp-1, 0x1.f6b42095a135bp-55, 0x1.9a7b5a36a6514p-1, 0x1.722cfcc9fa7a9p-55, 0x1.3537db9be0367p-1, 0x1.b327e7af040f0p-57, 0x1.98141c42e1310p-1, 0x1.d1ff80488f08dp-55,
    0x1.386597456282bp-1, -0x1.10fada93b07a8p-56, 0x1.95a67e00cb1fdp-1, -0x1.0befda21f862dp-55, 0x1.3b8e715a2840ap-1, -0x1.97653a7d2f07ap-56, 0x1.93328926d9e92p-1, -0x1.bb77003600cdap-55,
    0x1.3eb25d36cd53ap-1, -0x1.be570e1570fc0p-58, 0x1.90b84784ddaf7p-1, -0x1.0feb10ab93b87p-56, 0x1.41d14e4ba6790p-1, 0x1.4608fd287ecf5p-55, 0x1.8e37c303d9ad1p-1, -0x1.463a4b53d4bf8p-57,
    0x1.44eb381cf386bp-1, -0x1.3ed6c1e6a5505p-55, 0x1.8bb105a5dc900p-1, 0x1.863e03e9474c1p-55, 0x1.48000e431159fp-1, -0x1.b194a7463ed10p-55, 0x1.89241985d871fp-1, 0x1.c48d9c413ed84p-55,
    0x1.4b0fc46aab761p-1, 0x1.0da05738cc59cp-61, 0x1.869108d77a6c6p-1, 0x1.338ffe2bfe9ddp-56, 0x1.4e1a4e54ed51bp-1, -0x1.a492f89b7c76ap-55, 0x1.83f7dde701ca0p-1, -0x1.152cf609bc6e8p-59,
    0x1.511f9fd7b351cp-1, -0x1.5c0e861c48831p-55, 0x1.8158a31916d5dp-1, -0x1.de8b90b8228dep-57, 0x1.541facddbb724p-1, 0x1.232c28520d391p-56, 0x1.7eb362eaa1488p-1, 0x1.a1d65a4a5959fp-58,
    0x1.571a6966d59b3p-1, 0x1.c843b4d0fb197p-58, 0x1.7c0827f09e54fp-1, -0x1.c73d6d72aee68p-57, 0x1.5a0fc98813a12p-1, -0x1.d82e2b7d4227bp-55, 0x1.7956fcd7f6543p-1, -0x1.ab276e9d45ae4p-55,
    0x1.5cffc16bf8f0dp-1, 0x1.96cb370eb578ap-55, 0x1.769fec655211fp-1, -0x1.827d5cf8c68c5p-57, 0x1.5fea4552a9e57p-1, 0x1.0b6cef7ee20b7p-55, 0x1.73e30174efba1p-1, -0x1.5d3ae3d94ad5fp-57,
    0x1.62cf49921ac79p-1, -0x1.edd9855b6241ap-55, 0x1.712046fa77678p-1, 0x1.425b0a5029c81p-55, 0x1.65aec2963e755p-1, 0x1.126f96b71053cp-55, 0x1.6e57c800cf55ep-1, 0x1.60286dedbd0a6p-55,
    0x1.6888a4e134b2fp-1, -0x1.6b7d37644d5e6p-55, 0x1.6b898fa9efb5dp-1, 0x1.15ac786ccf4b2p-56, 0x1.6b5ce50b7821ap-1, -0x1.5d5158f702e0fp-57, 0x1.68b5a92eb6253p-1, -0x1.9a91ad985f89cp-55,
    0x1.6e2b77c40bde1p-1, -0x1.0e729857fad53p-56, 0x1.65dc1fdeb8cbap-1, -0x1.97c1b47337c77p-58, 0x1.70f451d0a8c40p-1, 0x1.97ede3885770dp-57, 0x1.62fcff20191c7p-1, 0x1.d9143895756efp-57,
    0x1.73b7680dea578p-1, -0x1.2248306dc12a2p-56, 0x1.6018526f563dfp-1, 0x1.46ca5e0e432d0p-55, 0x1.7674af6f7b524p-1, 0x1.e9d3f94ac84a8p-56, 0x1.5d2e255f1f17ap-1, 0x1.0314104c8892bp-55,
    0x1.792c1d0041d52p-1, -0x1.abf05eeb354ebp-55, 0x1.5a3e839824077p-1, 0x1.428aa2759be62p-55, 0x1.7bdda5e28b3c2p-1, 0x1.ad1197ccd0392p-59, 0x1.574978d8e83f2p-1, 0x1.f4714af282d23p-55,
    0x1.7e893f5037959p-1, 0x1.0eefbaa650c4cp-55, 0x1.544f10f592ca5p-1, -0x1.e7ae8e6c7a62fp-55, 0x1.812ede9ae4ba4p-1, -0x1.7830adf402ddap-55, 0x1.514f57d7bf3dap-1, 0x1.47a108073c259p-56,
};

/* sin(a + da) for |a| < 0.126: an odd polynomial with the tail's first-order correction. */
FV_FN double fvm_taylor_sin(double a, double da) {
    double xx = a * a;
    double p = fma(xx, FVM_S5, FVM_S4);
    p = fma(xx, p, FVM_S3);
    p = fma(xx, p, FVM_S2);
    p = fma(xx, p, FVM_S1);
    return a + fma(fma(p, a, -(0.5 * da)), xx, da);
}

/* sin(x + dx) for |x| < 0.855469: Taylor near 0, else the table entry nearest |x| plus a
 * correction from short polynomials in the (small) remainder. */
FV_FN double fvm_do_sin(double x, double dx) {
    if (fabs(x) < 0.126) return fvm_taylor_sin(x, dx);
    double xold = x;
    if (x <= 0) dx = -dx;
    double u = FVM_BIG + fabs(x);
    x = fabs(x) - (u - FVM_BIG);
    const double* t = fvm_sincos_table + ((unsigned)fvm_bits(u) << 2);
    double xx = x * x;
    double s = x + fma(x * xx, fma(xx, FVM_SN5, FVM_SN3), dx);
    double c = fma(x, dx, xx * fma(xx, fma(xx, FVM_CS6, FVM_CS4), FVM_CS2));
    double cor = fma(s, t[2], fma(-c, t[0], fma(s, t[3], t[1])));
    return copysign(t[0] + cor, xold);
}

/* cos(x + dx) for |x| < 0.855469, from the table entry nearest |x|. */
FV_FN double fvm_do_cos(double x, double dx) {
    if (x < 0) dx = -dx;
    double u = FVM_BIG + fabs(x);
    x = fabs(x) - (u - FVM_BIG) + dx;
    const double* t = fvm_sincos_table + ((unsigned)fvm_bits(u) << 2);
    double xx = x * x;
    double s = fma(x * xx, fma(xx, FVM_SN5, FVM_SN3), x);
    double c = xx * fma(xx, fma(xx, FVM_CS6, FVM_CS4), FVM_CS2);
    double cor = fma(-t[0], s, fma(-t[2], c, fma(-s, t[1], t[3])));
    return t[2] + cor;
}

/* glibc's sin(x) and cos(x) where 2^-26 <= |x| < 0.855469 (FVM_SINCOS_MID), without branches, so that a
 * loop over many x runs in vector instructions: fv_sin's Taylor and table results are both computed and
 * one selected, and the table work (entry, remainder, polynomials) is shared by sin and cos; the
 * operations are fvm_do_sin's and fvm_do_cos's with dx = 0, so the bits are fv_sin's and fv_cos's.
 * Any other x gives a meaningless finite or NaN result and reads no further than the table's end. */
#define FVM_SINCOS_MID(x) \
    ((((unsigned)(fvm_bits(x) >> 32) & 0x7fffffffu) - 0x3e500000u) < (0x3feb6000u - 0x3e500000u))
FV_FN void fvm_sincos_mid(double x, double* sin_x, double* cos_x) {
    double ax = fabs(x);
    double u = FVM_BIG + ax;
    double r = ax - (u - FVM_BIG);
    /* Table reads by index, with a 64-bit one: GCC vectorises those as gathers, not reads through a pointer. */
    fv_u64 row = (fvm_bits(u) & 0xffffffffu) << 2;
    row = row < 436u ? row : 436u;
    double t0 = fvm_sincos_table[row], t1 = fvm_sincos_table[row + 1];
    double t2 = fvm_sincos_table[row + 2], t3 = fvm_sincos_table[row + 3];
    double xx = r * r;
    double c = xx * fma(xx, fma(xx, FVM_CS6, FVM_CS4), FVM_CS2);
    double p = fma(xx, FVM_SN5, FVM_SN3);
    double s_sin = r + fma(r * xx, p, 0.0);
    double cor_sin = fma(s_sin, t2, fma(-fma(r, 0.0, c), t0, fma(s_sin, t3, t1)));
    double table_sin = copysign(t0 + cor_sin, x);
    double s_cos = fma(r * xx, p, r);
    double cor_cos = fma(-t0, s_cos, fma(-t2, c, fma(-s_cos, t1, t3)));
    *cos_x = t2 + cor_cos;
    *sin_x = ax < 0.126 ? fvm_taylor_sin(x, 0.0) : table_sin;
}

/* glibc's cos(x) where 0.855469 <= |x| < 2.426265 (FVM_COS_MID2, fv_cos's second range: sin(a + da) of
 * pi/2 - |x| = a + da), without branches, for loops over many x in vector instructions: fvm_do_sin's Taylor and
 * table results both computed and one selected, so the bits are fv_cos's. Any other x gives a meaningless finite
 * or NaN result and reads no further than the table's end. */
#define FVM_COS_MID2(x) \
    ((((unsigned)(fvm_bits(x) >> 32) & 0x7fffffffu) - 0x3feb6000u) < (0x400368fdu - 0x3feb6000u))
FV_FN double fvm_cos_mid2(double x) {
    double y = FVM_HP0 - fabs(x);
    double a = y + FVM_HP1;
    double da = (y - a) + FVM_HP1;
    double signed_da = a <= 0 ? -da : da;
    double u = FVM_BIG + fabs(a);
    double r = fabs(a) - (u - FVM_BIG);
    fv_u64 row = (fvm_bits(u) & 0xffffffffu) << 2; /* a 64-bit index: GCC vectorises the reads as gathers */
    row = row < 436u ? row : 436u;
    double t0 = fvm_sincos_table[row], t1 = fvm_sincos_table[row + 1];
    double t2 = fvm_sincos_table[row + 2], t3 = fvm_sincos_table[row + 3];
    double xx = r * r;
    double s = r + fma(r * xx, fma(xx, FVM_SN5, FVM_SN3), signed_da);
    double c = fma(r, signed_da, xx * fma(xx, fma(xx, FVM_CS6, FVM_CS4), FVM_CS2));
    double cor = fma(s, t2, fma(-c, t0, fma(s, t3, t1)));
    double table_sin = copysign(t0 + cor, a);
    return fabs(a) < 0.126 ? fvm_taylor_sin(a, da) : table_sin;
}

/* x = n pi/2 + (a + da) with |a + da| <= pi/4; returns n mod 4. */
FV_FN int fvm_reduce(double x, double* a, double* da) {
    double t = fma(x, FVM_HPINV, FVM_TOINT);
    double xn = t - FVM_TOINT;
    double y = fma(-xn, FVM_MP2, fma(-xn, FVM_MP1, x));
    double t2 = fma(-xn, FVM_PP3, y);
    double db = fma(-xn, FVM_PP3, y - t2);
    double b = fma(-xn, FVM_PP4, t2);
    db += fma(-xn, FVM_PP4, t2 - b);
    *a = b;
    *da = db;
    return (int)(fvm_bits(t) & 3);
}

FV_FN double fvm_sin_quadrant(double a, double da, int n) {
    double r = (n & 1) ? fvm_do_cos(a, da) : fvm_do_sin(a, da);
    return (n & 2) ? -r : r;
}

/* glibc's sin(x). */
FV_FN double fv_sin(double x) {
    unsigned k = (unsigned)(fvm_bits(x) >> 32) & 0x7fffffffu;
    if (k < 0x3e500000u) return x; /* |x| < 2^-26 */
    if (k < 0x3feb6000u) return fvm_do_sin(x, 0.0);
    if (k < 0x400368fdu) return copysign(fvm_do_cos(FVM_HP0 - fabs(x), FVM_HP1), x); /* |x| < 2.426265 */
    if (k < 0x419921fbu) {
        double a, da;
        int n = fvm_reduce(x, &a, &da);
        return fvm_sin_quadrant(a, da, n);
    }
    return sin(x); /* |x| >= 105414350, inf, NaN */
}

/* glibc's cos(x). */
FV_FN double fv_cos(double x) {
    unsigned k = (unsigned)(fvm_bits(x) >> 32) & 0x7fffffffu;
    if (k < 0x3e400000u) return 1.0; /* |x| < 2^-27 */
    if (k < 0x3feb6000u) return fvm_do_cos(x, 0.0);
    if (k < 0x400368fdu) {
        double y = FVM_HP0 - fabs(x);
        double a = y + FVM_HP1;
        return fvm_do_sin(a, (y - a) + FVM_HP1);
    }
    if (k < 0x419921fbu) {
        double a, da;
        int n = fvm_reduce(x, &a, &da);
        return fvm_sin_quadrant(a, da, n + 1);
    }
    return cos(x);
}

/* cos(x) for a float32 x with |x| <= 3.9, within 2^-52 of glibc's cos(x) relative to its size (every float32 in
 * [-3.6, 1.8]: benchmarks/lab/cos_near_check.c; a sample: tests/native/test_glibc_math.py, which holds it to the
 * 2^-49 that mountaincar_continuous.h assumes). Not glibc's bits, but straight-line code that runs in vector
 * instructions, for a step that rounds the result to float32 and checks that the rounding cannot differ from
 * glibc's. Taylor polynomials of degree 17 and 18 on r = x - k pi/2 (|r| <= pi/4), pi/2 in two parts: the first
 * has 31 bits, so that x - k P1 is exact for a float32 x and |k| <= 2. */
#define FVM_NEAR_P1 0x1.921fb544p+0
#define FVM_NEAR_P2 0x1.0b4611a626331p-34
/* (sin r - r) / -r^3 and (cos r - 1) / r^2 as polynomials in r^2, highest power first: 1/n! with alternating signs */
FVM_TABLE double fvm_near_sin[8] = {-1.0 / 355687428096000.0, 1.0 / 1307674368000.0, -1.0 / 6227020800.0,
                                    1.0 / 39916800.0, -1.0 / 362880.0, 1.0 / 5040.0, -1.0 / 120.0, 1.0 / 6.0};
FVM_TABLE double fvm_near_cos[9] = {-1.0 / 6402373705728000.0, 1.0 / 20922789888000.0, -1.0 / 87178291200.0,
                                    1.0 / 479001600.0, -1.0 / 3628800.0, 1.0 / 40320.0, -1.0 / 720.0, 1.0 / 24.0,
                                    -0.5};

/* c[0] x^(n-1) + ... + c[n-1] by Horner's rule, a multiply and an add a step (no fma). */
FV_FN double fvm_horner(const double* c, int n, double x) {
    double p = c[0];
    for (int i = 1; i < n; i++) p = p * x + c[i];
    return p;
}

FV_FN double fvm_cos_near(double x) {
    double t = x * FVM_HPINV + FVM_TOINT;
    double k = t - FVM_TOINT;
    int n = (int)(fvm_bits(t) & 3); /* k mod 4: cos(r + k pi/2) is cos r, -sin r, -cos r, sin r */
    double r = (x - k * FVM_NEAR_P1) - k * FVM_NEAR_P2;
    double rr = r * r;
    double sin_r = r - (r * rr) * fvm_horner(fvm_near_sin, 8, rr);
    double cos_r = 1.0 + rr * fvm_horner(fvm_near_cos, 9, rr);
    double v = (n & 1) ? sin_r : cos_r;
    return ((n + 1) & 2) ? -v : v;
}

/* pow: log(x) = k ln2 + log(c) + log1p(z/c - 1) with c from a 128-entry table, then exp(2 log(x)) by
 * exp's 2^(i/128) table; each step carries a tail, so the result is within 0.52 ulp. */
#define FVM_LOG_OFF 0x3fe6955500000000ULL
#define FVM_LN2HI 0x1.62e42fefa3800p-1
#define FVM_LN2LO 0x1.ef35793c76730p-45
#define FVM_A0 -0x1.0000000000000p-1
#define FVM_A1 -0x1.5555555555560p-1
#define FVM_A2 0x1.0000000000006p-1
#define FVM_A3 0x1.999999959554ep-1
#define FVM_A4 -0x1.555555529a47ap-1
#define FVM_A5 -0x1.2495b9b4845e9p+0
#define FVM_A6 0x1.0002b8b263fc3p+0
#define FVM_INVLN2N 0x1.71547652b82fep+7 /* 128 / ln 2 */
#define FVM_NEGLN2HIN -0x1.62e42fefa0000p-8
#define FVM_NEGLN2LON -0x1.cf79abc9e3b3ap-47
#define FVM_C2 0x1.ffffffffffdbdp-2
#define FVM_C3 0x1.555555555543cp-3
#define FVM_C4 0x1.55555cf172b91p-5
#define FVM_C5 0x1.1111167a4d017p-7
#define FVM_SHIFT 0x1.8p52

/* {1/c, log(c) rounded to a multiple of 2^-43, the rest of log(c)} for each subinterval of [OFF, 2 OFF). */
FVM_TABLE double fvm_log_table[384] = {
    0x1.6a00000000000p+0, -0x1.62c82f2b9c800p-2, 0x1.ab42428375680p-48, 0x1.6800000000000p+0, -0x1.5d1bdbf580800p-2, -0x1.ca508d8e0f720p-46,
    0x1.6600000000000p+0, -0x1.5767717455800p-2, -0x1.362a4d5b6506dp-45, 0x1.6400000000000p+0, -0x1.51aad872df800p-2, -0x1.684e49eb067d5p-49,
    0x1.6200000000000p+0, -0x1.4be5f95777800p-2, -0x1.41b6993293ee0p-47, 0x1.6000000000000p+0, -0x1.4618bc21c6000p-2, 0x1.3d82f484c84ccp-46,
    0x1.5e00000000000p+0, -0x1.404308686a800p-2, 0x1.c42f3ed820b3ap-50, 0x1.5c00000000000p+0, -0x1.3a64c55694800p-2, 0x1.0b1c686519460p-45,
    0x1.5a00000000000p+0, -0x1.347dd9a988000p-2, 0x1.5594dd4c58092p-45, 0x1.5800000000000p+0, -0x1.2e8e2bae12000p-2, 0x1.67b1e99b72bd8p-45,
    0x1.5600000000000p+0, -0x1.2895a13de8800p-2, 0x1.5ca14b6cfb03fp-46, 0x1.5600000000000p+0, -0x1.2895a13de8800p-2, 0x1.5ca14b6cfb03fp-46,
    0x1.5400000000000p+0, -0x1.22941fbcf7800p-2, -0x1.65a242853da76p-46, 0x1.5200000000000p+0, -0x1.1c898c1699800p-2, -0x1.fafbc68e75404p-46,
    0x1.5000000000000p+0, -0x1.1675cababa800p-2, 0x1.f1fc63382a8f0p-46, 0x1.4e00000000000p+0, -0x1.1058bf9ae4800p-2, -0x1.6a8c4fd055a66p-45,
    0x1.4c00000000000p+0, -0x1.0a324e2739000p-2, -0x1.c6bee7ef4030ep-47, 0x1.4a00000000000p+0, -0x1.0402594b4d000p-2, -0x1.036b89ef42d7fp-48,
    0x1.4a00000000000p+0, -0x1.0402594b4d000p-2, -0x1.036b89ef42d7fp-48, 0x1.4800000000000p+0, -0x1.fb9186d5e4000p-3, 0x1.d572aab993c87p-47,
    0x1.4600000000000p+0, -0x1.ef0adcbdc6000p-3, 0x1.b26b79c86af24p-45, 0x1.4400000000000p+0, -0x1.e27076e2af000p-3, -0x1.72f4f543fff10p-46,
    0x1.4200000000000p+0, -0x1.d5c216b4fc000p-3, 0x1.1ba91bbca681bp-45, 0x1.4000000000000p+0, -0x1.c8ff7c79aa000p-3, 0x1.7794f689f8434p-45,
    0x1.4000000000000p+0, -0x1.c8ff7c79aa000p-3, 0x1.7794f689f8434p-45, 0x1.3e00000000000p+0, -0x1.bc286742d9000p-3, 0x1.94eb0318bb78fp-46,
    0x1.3c00000000000p+0, -0x1.af3c94e80c000p-3, 0x1.a4e633fcd9066p-52, 0x1.3a00000000000p+0, -0x1.a23bc1fe2b000p-3, -0x1.58c64dc46c1eap-45,
    0x1.3a00000000000p+0, -0x1.a23bc1fe2b000p-3, -0x1.58c64dc46c1eap-45, 0x1.3800000000000p+0, -0x1.9525a9cf45000p-3, -0x1.ad1d904c1d4e3p-45,
    0x1.3600000000000p+0, -0x1.87fa06520d000p-3, 0x1.bbdbf7fdbfa09p-45, 0x1.3400000000000p+0, -0x1.7ab890210e000p-3, 0x1.bdb9072534a58p-45,
    0x1.3400000000000p+0, -0x1.7ab890210e000p-3, 0x1.bdb9072534a58p-45, 0x1.3200000000000p+0, -0x1.6d60fe719d000p-3, -0x1.0e46aa3b2e266p-46,
    0x1.3000000000000p+0, -0x1.5ff3070a79000p-3, -0x1.e9e439f105039p-46, 0x1.3000000000000p+0, -0x1.5ff3070a79000p-3, -0x1.e9e439f105039p-46,
    0x1.2e00000000000p+0, -0x1.526e5e3a1b000p-3, -0x1.0de8b90075b8fp-45, 0x1.2c00000000000p+0, -0x1.44d2b6ccb8000p-3, 0x1.70cc16135783cp-46,
    0x1.2c00000000000p+0, -0x1.44d2b6ccb8000p-3, 0x1.70cc16135783cp-46, 0x1.2a00000000000p+0, -0x1.371fc201e9000p-3, 0x1.178864d27543ap-48,
    0x1.2800000000000p+0, -0x1.29552f81ff000p-3, -0x1.48d301771c408p-45, 0x1.2600000000000p+0, -0x1.1b72ad52f6000p-3, -0x1.e80a41811a396p-45,
    0x1.2600000000000p+0, -0x1.1b72ad52f6000p-3, -0x1.e80a41811a396p-45, 0x1.2400000000000p+0, -0x1.0d77e7cd09000p-3, 0x1.a699688e85bf4p-47,
    0x1.2400000000000p+0, -0x1.0d77e7cd09000p-3, 0x1.a699688e85bf4p-47, 0x1.2200000000000p+0, -0x1.fec9131dbe000p-4, -0x1.575545ca333f2p-45,
    0x1.2000000000000p+0, -0x1.e27076e2b0000p-4, 0x1.a342c2af0003cp-45, 0x1.2000000000000p+0, -0x1.e27076e2b0000p-4, 0x1.a342c2af0003cp-45,
    0x1.1e00000000000p+0, -0x1.c5e548f5bc000p-4, -0x1.d0c57585fbe06p-46, 0x1.1c00000000000p+0, -0x1.a926d3a4ae000p-4, 0x1.53935e85baac8p-45,
    0x1.1c00000000000p+0, -0x1.a926d3a4ae000p-4, 0x1.53935e85baac8p-45, 0x1.1a00000000000p+0, -0x1.8c345d631a000p-4, 0x1.37c294d2f5668p-46,
    0x1.1a00000000000p+0, -0x1.8c345d631a000p-4, 0x1.37c294d2f5668p-46, 0x1.1800000000000p+0, -0x1.6f0d28ae56000p-4, -0x1.69737c93373dap-45,
    0x1.1600000000000p+0, -0x1.51b073f062000p-4, 0x1.f025b61c65e57p-46, 0x1.1600000000000p+0, -0x1.51b073f062000p-4, 0x1.f025b61c65e57p-46,
    0x1.1400000000000p+0, -0x1.341d7961be000p-4, 0x1.c5edaccf913dfp-45, 0x1.1400000000000p+0, -0x1.341d7961be000p-4, 0x1.c5edaccf913dfp-45,
    0x1.1200000000000p+0, -0x1.16536eea38000p-4, 0x1.47c5e768fa309p-46, 0x1.1000000000000p+0, -0x1.f0a30c0118000p-5, 0x1.d599e83368e91p-45,
    0x1.1000000000000p+0, -0x1.f0a30c0118000p-5, 0x1.d599e83368e91p-45, 0x1.0e00000000000p+0, -0x1.b42dd71198000p-5, 0x1.c827ae5d6704cp-46,
    0x1.0e00000000000p+0, -0x1.b42dd71198000p-5, 0x1.c827ae5d6704cp-46, 0x1.0c00000000000p+0, -0x1.77458f632c000p-5, -0x1.cfc4634f2a1eep-45,
    0x1.0c00000000000p+0, -0x1.77458f632c000p-5, -0x1.cfc4634f2a1eep-45, 0x1.0a00000000000p+0, -0x1.39e87b9fec000p-5, 0x1.502b7f526feaap-48,
    0x1.0a00000000000p+0, -0x1.39e87b9fec000p-5, 0x1.502b7f526feaap-48, 0x1.0800000000000p+0, -0x1.f829b0e780000p-6, -0x1.980267c7e09e4p-45,
    0x1.0800000000000p+0, -0x1.f829b0e780000p-6, -0x1.980267c7e09e4p-45, 0x1.0600000000000p+0, -0x1.7b91b07d58000p-6, -0x1.88d5493faa639p-45,
    0x1.0400000000000p+0, -0x1.fc0a8b0fc0000p-7, -0x1.f1e7cf6d3a69cp-50, 0x1.0400000000000p+0, -0x1.fc0a8b0fc0000p-7, -0x1.f1e7cf6d3a69cp-50,
    0x1.0200000000000p+0, -0x1.fe02a6b100000p-8, -0x1.9e23f0dda40e4p-46, 0x1.0200000000000p+0, -0x1.fe02a6b100000p-8, -0x1.9e23f0dda40e4p-46,
    0x1.0000000000000p+0, 0x0p+0, 0x0p+0, 0x1.0000000000000p+0, 0x0p+0, 0x0p+0,
    0x1.fc00000000000p-1, 0x1.0101575890000p-7, -0x1.0c76b999d2be8p-46, 0x1.f800000000000p-1, 0x1.0205658938000p-6, -0x1.3dc5b06e2f7d2p-45,
    0x1.f400000000000p-1, 0x1.8492528c90000p-6, -0x1.aa0ba325a0c34p-45, 0x1.f000000000000p-1, 0x1.0415d89e74000p-5, 0x1.111c05cf1d753p-47,
    0x1.ec00000000000p-1, 0x1.466aed42e0000p-5, -0x1.c167375bdfd28p-45, 0x1.e800000000000p-1, 0x1.894aa149fc000p-5, -0x1.97995d05a267dp-46,
    0x1.e400000000000p-1, 0x1.ccb73cdddc000p-5, -0x1.a68f247d82807p-46, 0x1.e200000000000p-1, 0x1.eea31c006c000p-5, -0x1.e113e4fc93b7bp-47,
    0x1.de00000000000p-1, 0x1.1973bd1466000p-4, -0x1.5325d560d9e9bp-45, 0x1.da00000000000p-1, 0x1.3bdf5a7d1e000p-4, 0x1.cc85ea5db4ed7p-45,
    0x1.d600000000000p-1, 0x1.5e95a4d97a000p-4, -0x1.c69063c5d1d1ep-45, 0x1.d400000000000p-1, 0x1.700d30aeac000p-4, 0x1.c1e8da99ded32p-49,
    0x1.d000000000000p-1, 0x1.9335e5d594000p-4, 0x1.3115c3abd47dap-45, 0x1.cc00000000000p-1, 0x1.b6ac88dad6000p-4, -0x1.390802bf768e5p-46,
    0x1.ca00000000000p-1, 0x1.c885801bc4000p-4, 0x1.646d1c65aacd3p-45, 0x1.c600000000000p-1, 0x1.ec739830a2000p-4, -0x1.dc068afe645e0p-45,
    0x1.c400000000000p-1, 0x1.fe89139dbe000p-4, -0x1.534d64fa10afdp-45, 0x1.c000000000000p-1, 0x1.1178e8227e000p-3, 0x1.1ef78ce2d07f2p-45,
    0x1.be00000000000p-1, 0x1.1aa2b7e23f000p-3, 0x1.ca78e44389934p-45, 0x1.ba00000000000p-1, 0x1.2d1610c868000p-3, 0x1.39d6ccb81b4a1p-47,
    0x1.b800000000000p-1, 0x1.365fcb0159000p-3, 0x1.62fa8234b7289p-51, 0x1.b400000000000p-1, 0x1.4913d8333b000p-3, 0x1.5837954fdb678p-45,
    0x1.b200000000000p-1, 0x1.527e5e4a1b000p-3, 0x1.633e8e5697dc7p-45, 0x1.ae00000000000p-1, 0x1.6574ebe8c1000p-3, 0x1.9cf8b2c3c2e78p-46,
    0x1.ac00000000000p-1, 0x1.6f0128b757000p-3, -0x1.5118de59c21e1p-45, 0x1.aa00000000000p-1, 0x1.7898d85445000p-3, -0x1.c661070914305p-46,
    0x1.a600000000000p-1, 0x1.8beafeb390000p-3, -0x1.73d54aae92cd1p-47, 0x1.a400000000000p-1, 0x1.95a5adcf70000p-3, 0x1.7f22858a0ff6fp-47,
    0x1.a000000000000p-1, 0x1.a93ed3c8ae000p-3, -0x1.8724350562169p-45, 0x1.9e00000000000p-1, 0x1.b31d8575bd000p-3, -0x1.c358d4eace1aap-47,
    0x1.9c00000000000p-1, 0x1.bd087383be000p-3, -0x1.d4bc4595412b6p-45, 0x1.9a00000000000p-1, 0x1.c6ffbc6f01000p-3, -0x1.1ec72c5962bd2p-48,
    0x1.9600000000000p-1, 0x1.db13db0d49000p-3, -0x1.aff2af715b035p-45, 0x1.9400000000000p-1, 0x1.e530effe71000p-3, 0x1.212276041f430p-51,
    0x1.9200000000000p-1, 0x1.ef5ade4dd0000p-3, -0x1.a211565bb8e11p-51, 0x1.9000000000000p-1, 0x1.f991c6cb3b000p-3, 0x1.bcbecca0cdf30p-46,
    0x1.8c00000000000p-1, 0x1.07138604d5800p-2, 0x1.89cdb16ed4e91p-48, 0x1.8a00000000000p-1, 0x1.0c42d67616000p-2, 0x1.7188b163ceae9p-45,
    0x1.8800000000000p-1, 0x1.1178e8227e800p-2, -0x1.c210e63a5f01cp-45, 0x1.8600000000000p-1, 0x1.16b5ccbacf800p-2, 0x1.b9acdf7a51681p-45,
    0x1.8400000000000p-1, 0x1.1bf99635a6800p-2, 0x1.ca6ed5147bdb7p-45, 0x1.8200000000000p-1, 0x1.214456d0eb800p-2, 0x1.a87deba46baeap-47,
    0x1.7e00000000000p-1, 0x1.2bef07cdc9000p-2, 0x1.a9cfa4a5004f4p-45, 0x1.7c00000000000p-1, 0x1.314f1e1d36000p-2, -0x1.8e27ad3213cb8p-45,
    0x1.7a00000000000p-1, 0x1.36b6776be1000p-2, 0x1.16ecdb0f177c8p-46, 0x1.7800000000000p-1, 0x1.3c25277333000p-2, 0x1.83b54b606bd5cp-46,
    0x1.7600000000000p-1, 0x1.419b423d5e800p-2, 0x1.8e436ec90e09dp-47, 0x1.7400000000000p-1, 0x1.4718dc271c800p-2, -0x1.f27ce0967d675p-45,
    0x1.7200000000000p-1, 0x1.4c9e09e173000p-2, -0x1.e20891b0ad8a4p-45, 0x1.7000000000000p-1, 0x1.522ae0738a000p-2, 0x1.ebe708164c759p-45,
    0x1.6e00000000000p-1, 0x1.57bf753c8d000p-2, 0x1.fadedee5d40efp-46, 0x1.6c00000000000p-1, 0x1.5d5bddf596000p-2, -0x1.a0b2a08a465dcp-47,
};

/* exp's table: for i = 0..127, the bits of the relative rounding error of 2^(i/128) and those of
 * 2^(i/128) with i << 45 subtracted (the exponent is added back from k). */
FVM_TABLE fv_u64 fvm_exp_table[256] = {
    0x0000000000000000ULL, 0x3ff0000000000000ULL, 0x3c9b3b4f1a88bf6eULL, 0x3feff63da9fb3335ULL,
    0xbc7160139cd8dc5dULL, 0x3fefec9a3e778061ULL, 0xbc905e7a108766d1ULL, 0x3fefe315e86e7f85ULL,
    0x3c8cd2523567f613ULL, 0x3fefd9b0d3158574ULL, 0xbc8bce8023f98efaULL, 0x3fefd06b29ddf6deULL,
    0x3c60f74e61e6c861ULL, 0x3fefc74518759bc8ULL, 0x3c90a3e45b33d399ULL, 0x3fefbe3ecac6f383ULL,
    0x3c979aa65d837b6dULL, 0x3fefb5586cf9890fULL, 0x3c8eb51a92fdeffcULL, 0x3fefac922b7247f7ULL,
    0x3c3ebe3d702f9cd1ULL, 0x3fefa3ec32d3d1a2ULL, 0xbc6a033489906e0bULL, 0x3fef9b66affed31bULL,
    0xbc9556522a2fbd0eULL, 0x3fef9301d0125b51ULL, 0xbc5080ef8c4eea55ULL, 0x3fef8abdc06c31ccULL,
    0xbc91c923b9d5f416ULL, 0x3fef829aaea92de0ULL, 0x3c80d3e3e95c55afULL, 0x3fef7a98c8a58e51ULL,
    0xbc801b15eaa59348ULL, 0x3fef72b83c7d517bULL, 0xbc8f1ff055de323dULL, 0x3fef6af9388c8deaULL,
    0x3c8b898c3f1353bfULL, 0x3fef635beb6fcb75ULL, 0xbc96d99c7611eb26ULL, 0x3fef5be084045cd4ULL,
    0x3c9aecf73e3a2f60ULL, 0x3fef54873168b9aaULL, 0xbc8fe782cb86389dULL, 0x3fef4d5022fcd91dULL,
    0x3c8a6f4144a6c38dULL, 0x3fef463b88628cd6ULL, 0x3c807a05b0e4047dULL, 0x3fef3f49917ddc96ULL,
    0x3c968efde3a8a894ULL, 0x3fef387a6e756238ULL, 0x3c875e18f274487dULL, 0x3fef31ce4fb2a63fULL,
    0x3c80472b981fe7f2ULL, 0x3fef2b4565e27cddULL, 0xbc96b87b3f71085eULL, 0x3fef24dfe1f56381ULL,
    0x3c82f7e16d09ab31ULL, 0x3fef1e9df51fdee1ULL, 0xbc3d219b1a6fbffaULL, 0x3fef187fd0dad990ULL,
    0x3c8b3782720c0ab4ULL, 0x3fef1285a6e4030bULL, 0x3c6e149289cecb8fULL, 0x3fef0cafa93e2f56ULL,
    0x3c834d754db0abb6ULL, 0x3fef06fe0a31b715ULL, 0x3c864201e2ac744cULL, 0x3fef0170fc4cd831ULL,
    0x3c8fdd395dd3f84aULL, 0x3feefc08b26416ffULL, 0xbc86a3803b8e5b04ULL, 0x3feef6c55f929ff1ULL,
    0xbc924aedcc4b5068ULL, 0x3feef1a7373aa9cbULL, 0xbc9907f81b512d8eULL, 0x3feeecae6d05d866ULL,
    0xbc71d1e83e9436d2ULL, 0x3feee7db34e59ff7ULL, 0xbc991919b3ce1b15ULL, 0x3feee32dc313a8e5ULL,
    0x3c859f48a72a4c6dULL, 0x3feedea64c123422ULL, 0xbc9312607a28698aULL, 0x3feeda4504ac801cULL,
    0xbc58a78f4817895bULL, 0x3feed60a21f72e2aULL, 0xbc7c2c9b67499a1bULL, 0x3feed1f5d950a897ULL,
    0x3c4363ed60c2ac11ULL, 0x3feece086061892dULL, 0x3c9666093b0664efULL, 0x3feeca41ed1d0057ULL,
    0x3c6ecce1daa10379ULL, 0x3feec6a2b5c13cd0ULL, 0x3c93ff8e3f0f1230ULL, 0x3feec32af0d7d3deULL,
    0x3c7690cebb7aafb0ULL, 0x3feebfdad5362a27ULL, 0x3c931dbdeb54e077ULL, 0x3feebcb299fddd0dULL,
    0xbc8f94340071a38eULL, 0x3feeb9b2769d2ca7ULL, 0xbc87deccdc93a349ULL, 0x3feeb6daa2cf6642ULL,
    0xbc78dec6bd0f385fULL, 0x3feeb42b569d4f82ULL, 0xbc861246ec7b5cf6ULL, 0x3feeb1a4ca5d920fULL,
    0x3c93350518fdd78eULL, 0x3feeaf4736b527daULL, 0x3c7b98b72f8a9b05ULL, 0x3feead12d497c7fdULL,
    0x3c9063e1e21c5409ULL, 0x3feeab07dd485429ULL, 0x3c34c7855019c6eaULL, 0x3feea9268a5946b7ULL,
    0x3c9432e62b64c035ULL, 0x3feea76f15ad2148ULL, 0xbc8ce44a6199769fULL, 0x3feea5e1b976dc09ULL,
    0xbc8c33c53bef4da8ULL, 0x3feea47eb03a5585ULL, 0xbc845378892be9aeULL, 0x3feea34634ccc320ULL,
    0xbc93cedd78565858ULL, 0x3feea23882552225ULL, 0x3c5710aa807e1964ULL, 0x3feea155d44ca973ULL,
    0xbc93b3efbf5e2228ULL, 0x3feea09e667f3bcdULL, 0xbc6a12ad8734b982ULL, 0x3feea012750bdabfULL,
    0xbc6367efb86da9eeULL, 0x3fee9fb23c651a2fULL, 0xbc80dc3d54e08851ULL, 0x3fee9f7df9519484ULL,
    0xbc781f647e5a3ecfULL, 0x3fee9f75e8ec5f74ULL, 0xbc86ee4ac08b7db0ULL, 0x3fee9f9a48a58174ULL,
    0xbc8619321e55e68aULL, 0x3fee9feb564267c9ULL, 0x3c909ccb5e09d4d3ULL, 0x3feea0694fde5d3fULL,
    0xbc7b32dcb94da51dULL, 0x3feea11473eb0187ULL, 0x3c94ecfd5467c06bULL, 0x3feea1ed0130c132ULL,
    0x3c65ebe1abd66c55ULL, 0x3feea2f336cf4e62ULL, 0xbc88a1c52fb3cf42ULL, 0x3feea427543e1a12ULL,
    0xbc9369b6f13b3734ULL, 0x3feea589994cce13ULL, 0xbc805e843a19ff1eULL, 0x3feea71a4623c7adULL,
    0xbc94d450d872576eULL, 0x3feea8d99b4492edULL, 0x3c90ad675b0e8a00ULL, 0x3feeaac7d98a6699ULL,
    0x3c8db72fc1f0eab4ULL, 0x3feeace5422aa0dbULL, 0xbc65b6609cc5e7ffULL, 0x3feeaf3216b5448cULL,
    0x3c7bf68359f35f44ULL, 0x3feeb1ae99157736ULL, 0xbc93091fa71e3d83ULL, 0x3feeb45b0b91ffc6ULL,
    0xbc5da9b88b6c1e29ULL, 0x3feeb737b0cdc5e5ULL, 0xbc6c23f97c90b959ULL, 0x3feeba44cbc8520fULL,
    0xbc92434322f4f9aaULL, 0x3feebd829fde4e50ULL, 0xbc85ca6cd7668e4bULL, 0x3feec0f170ca07baULL,
    0x3c71affc2b91ce27ULL, 0x3feec49182a3f090ULL, 0x3c6dd235e10a73bbULL, 0x3feec86319e32323ULL,
    0xbc87c50422622263ULL, 0x3feecc667b5de565ULL, 0x3c8b1c86e3e231d5ULL, 0x3feed09bec4a2d33ULL,
    0xbc91bbd1d3bcbb15ULL, 0x3feed503b23e255dULL, 0x3c90cc319cee31d2ULL, 0x3feed99e1330b358ULL,
    0x3c8469846e735ab3ULL, 0x3feede6b5579fdbfULL, 0xbc82dfcd978e9db4ULL, 0x3feee36bbfd3f37aULL,
    0x3c8c1a7792cb3387ULL, 0x3feee89f995ad3adULL, 0xbc907b8f4ad1d9faULL, 0x3feeee07298db666ULL,
    0xbc55c3d956dcaebaULL, 0x3feef3a2b84f15fbULL, 0xbc90a40e3da6f640ULL, 0x3feef9728de5593aULL,
    0xbc68d6f438ad9334ULL, 0x3feeff76f2fb5e47ULL, 0xbc91eee26b588a35ULL, 0x3fef05b030a1064aULL,
    0x3c74ffd70a5fddcdULL, 0x3fef0c1e904bc1d2ULL, 0xbc91bdfbfa9298acULL, 0x3fef12c25bd71e09ULL,
    0x3c736eae30af0cb3ULL, 0x3fef199bdd85529cULL, 0x3c8ee3325c9ffd94ULL, 0x3fef20ab5fffd07aULL,
    0x3c84e08fd10959acULL, 0x3fef27f12e57d14bULL, 0x3c63cdaf384e1a67ULL, 0x3fef2f6d9406e7b5ULL,
    0x3c676b2c6c921968ULL, 0x3fef3720dcef9069ULL, 0xbc808a1883ccb5d2ULL, 0x3fef3f0b555dc3faULL,
    0xbc8fad5d3ffffa6fULL, 0x3fef472d4a07897cULL, 0xbc900dae3875a949ULL, 0x3fef4f87080d89f2ULL,
    0x3c74a385a63d07a7ULL, 0x3fef5818dcfba487ULL, 0xbc82919e2040220fULL, 0x3fef60e316c98398ULL,
    0x3c8e5a50d5c192acULL, 0x3fef69e603db3285ULL, 0x3c843a59ac016b4bULL, 0x3fef7321f301b460ULL,
    0xbc82d52107b43e1fULL, 0x3fef7c97337b9b5fULL, 0xbc892ab93b470dc9ULL, 0x3fef864614f5a129ULL,
    0x3c74b604603a88d3ULL, 0x3fef902ee78b3ff6ULL, 0x3c83c5ec519d7271ULL, 0x3fef9a51fbc74c83ULL,
    0xbc8ff7128fd391f0ULL, 0x3fefa4afa2a490daULL, 0xbc8dae98e223747dULL, 0x3fefaf482d8e67f1ULL,
    0x3c8ec3bc41aa2008ULL, 0x3fefba1bee615a27ULL, 0x3c842b94c3a9eb32ULL, 0x3fefc52b376bba97ULL,
    0x3c8a64a931d185eeULL, 0x3fefd0765b6e4540ULL, 0xbc8e37bae43be3edULL, 0x3fefdbfdad9cbe14ULL,
    0x3c77893b4d91cd9dULL, 0x3fefe7c1819e90d8ULL, 0x3c5305c14160cc89ULL, 0x3feff3c22b8f71f1ULL,
};

/* glibc's pow(x, 2.0) for 2^-250 <= |x| <= 2^250, |x| != 1 (pow's special case): log, then exp of twice it. */
FV_FN double fvm_pow2_log_exp(double x) {
    double ax = fabs(x);
    fv_u64 ix = fvm_bits(ax);
    fv_u64 tmp = ix - FVM_LOG_OFF;
    const double* e = fvm_log_table + 3 * (int)((tmp >> 45) & 127);
    double kd = (double)((long long)tmp >> 52);
    double z = fvm_double(ix - (tmp & (0xfffULL << 52)));
    double r = fma(z, e[0], -1.0);
    double t1 = fma(kd, FVM_LN2HI, e[1]);
    double t2 = t1 + r;
    double lo1 = fma(kd, FVM_LN2LO, e[2]);
    double lo2 = (t1 - t2) + r;
    double ar = FVM_A0 * r;
    double ar2 = r * ar;
    double ar3 = r * ar2;
    double hi = t2 + ar2;
    double lo3 = fma(ar, r, -ar2);
    double lo4 = (t2 - hi) + ar2;
    double p = fma(ar2, fma(ar2, fma(r, FVM_A6, FVM_A5), fma(r, FVM_A4, FVM_A3)), fma(r, FVM_A2, FVM_A1));
    double lo = fma(ar3, p, ((lo1 + lo2) + lo3) + lo4);
    double lg = hi + lo;
    double lg_tail = (hi - lg) + lo;
    /* exp(ehi + elo) with ehi + elo = 2 log(x) */
    double ehi = 2.0 * lg;
    double elo = fma(2.0, lg_tail, fma(lg, 2.0, -ehi));
    double kn = fma(ehi, FVM_INVLN2N, FVM_SHIFT);
    fv_u64 ki = fvm_bits(kn);
    kn -= FVM_SHIFT;
    double rr = fma(kn, FVM_NEGLN2LON, fma(kn, FVM_NEGLN2HIN, ehi));
    rr = elo + rr;
    int idx = 2 * (int)(ki & 127);
    double scale = fvm_double(fvm_exp_table[idx + 1] + (ki << 45));
    double r2 = rr * rr;
    double q = fma(r2, fma(rr, FVM_C3, FVM_C2), fvm_double(fvm_exp_table[idx]) + rr);
    q = fma(r2 * r2, fma(rr, FVM_C5, FVM_C4), q);
    return fma(q, scale, scale);
}

/* glibc's pow(x, 2.0), which NumPy's float64 ** 2 and Python's float ** 2 call. pow is within 0.54 ulp of
 * x^2 (optimized-routines' bound for glibc's pow), so where x * x, the correctly rounded square, is within
 * 7/16 ulp of x^2 (lo, the product's exact remainder), every other double is over 0.56 ulp away and pow
 * returns x * x too: about 7 squares in 8 skip the log and exp. (The one double nearer than that, half an ulp
 * below a power-of-two square, never matters: such a square of a double is exact, that of +-2^k.) */
FV_FN double fv_pow2(double x) {
    double ax = fabs(x), sq = x * x, lo = fma(x, x, -sq);
    if (!(ax >= 0x1p-250 && ax <= 0x1p250)) return sq;
    double ulp = fvm_double(fvm_bits(sq) & 0x7ff0000000000000ULL) * 0x1p-52;
    if (fabs(lo) <= 0.4375 * ulp) return sq; /* and 1 for +-1, pow's special case */
    return fvm_pow2_log_exp(x);
}

/* powf: log2(x) = k + log2(c) + log2(z/c) with c from a 16-entry table, then 2^(2 log2(x)) by a 32-entry
 * table, all in double, rounded once to float. */
#define FVM_POWF_OFF 0x3f330000u
#define FVM_L2_A0 0x1.27616c9496e0bp-2
#define FVM_L2_A1 -0x1.71969a075c67ap-2
#define FVM_L2_A2 0x1.ec70a6ca7baddp-2
#define FVM_L2_A3 -0x1.7154748bef6c8p-1
#define FVM_L2_A4 0x1.71547652ab82bp+0
#define FVM_E2_SHIFT 0x1.8p47
#define FVM_E2_C0 0x1.c6af84b912394p-5
#define FVM_E2_C1 0x1.ebfce50fac4f3p-3
#define FVM_E2_C2 0x1.62e42ff0c52d6p-1

/* {1/c, log2(c)} for each of powf's 16 subintervals (the divisors c are glibc's choice). */
FVM_TABLE double fvm_log2_table[32] = {
    0x1.661ec79f8f3bep+0, -0x1.efec65b963019p-2, 0x1.571ed4aaf883dp+0, -0x1.b0b6832d4fca4p-2,
    0x1.49539f0f010b0p+0, -0x1.7418b0a1fb77bp-2, 0x1.3c995b0b80385p+0, -0x1.39de91a6dcf7bp-2,
    0x1.30d190c8864a5p+0, -0x1.01d9bf3f2b631p-2, 0x1.25e227b0b8ea0p+0, -0x1.97c1d1b3b7af0p-3,
    0x1.1bb4a4a1a343fp+0, -0x1.2f9e393af3c9fp-3, 0x1.12358f08ae5bap+0, -0x1.960cbbf788d5cp-4,
    0x1.0953f419900a7p+0, -0x1.a6f9db6475fcep-5, 0x1.0000000000000p+0, 0x0p+0,
    0x1.e608cfd9a47acp-1, 0x1.338ca9f24f53dp-4, 0x1.ca4b31f026aa0p-1, 0x1.476a9543891bap-3,
    0x1.b2036576afce6p-1, 0x1.e840b4ac4e4d2p-3, 0x1.9c2d163a1aa2dp-1, 0x1.40645f0c6651cp-2,
    0x1.886e6037841edp-1, 0x1.88e9c2c1b9ff8p-2, 0x1.767dcf5534862p-1, 0x1.ce0a44eb17bccp-2,
};

/* The bits of 2^(i/32) with i << 47 subtracted, i = 0..31. */
FVM_TABLE fv_u64 fvm_exp2_table[32] = {
    0x3ff0000000000000ULL, 0x3fefd9b0d3158574ULL, 0x3fefb5586cf9890fULL, 0x3fef9301d0125b51ULL,
    0x3fef72b83c7d517bULL, 0x3fef54873168b9aaULL, 0x3fef387a6e756238ULL, 0x3fef1e9df51fdee1ULL,
    0x3fef06fe0a31b715ULL, 0x3feef1a7373aa9cbULL, 0x3feedea64c123422ULL, 0x3feece086061892dULL,
    0x3feebfdad5362a27ULL, 0x3feeb42b569d4f82ULL, 0x3feeab07dd485429ULL, 0x3feea47eb03a5585ULL,
    0x3feea09e667f3bcdULL, 0x3fee9f75e8ec5f74ULL, 0x3feea11473eb0187ULL, 0x3feea589994cce13ULL,
    0x3feeace5422aa0dbULL, 0x3feeb737b0cdc5e5ULL, 0x3feec49182a3f090ULL, 0x3feed503b23e255dULL,
    0x3feee89f995ad3adULL, 0x3feeff76f2fb5e47ULL, 0x3fef199bdd85529cULL, 0x3fef3720dcef9069ULL,
    0x3fef5818dcfba487ULL, 0x3fef7c97337b9b5fULL, 0x3fefa4afa2a490daULL, 0x3fefd0765b6e4540ULL,
};

FV_FN unsigned fvm_float_bits(float x) {
#ifdef __CUDACC__
    return (unsigned)__float_as_uint(x);
#else
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

FV_FN float fvm_float(unsigned u) {
#ifdef __CUDACC__
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

/* glibc's powf(x, 2.0f), which NumPy's float32 ** 2 calls; x * x outside 2^-62 <= |x| <= 2^62. */
FV_FN float fv_powf2(float x) {
    float ax = fabsf(x);
    if (!(ax >= 0x1p-62f && ax <= 0x1p62f)) return x * x;
    unsigned ix = fvm_float_bits(ax);
    unsigned tmp = ix - FVM_POWF_OFF;
    const double* e = fvm_log2_table + 2 * (int)((tmp >> 19) & 15);
    unsigned top = tmp & 0xff800000u;
    double z = (double)fvm_float(ix - top);
    double r = fma(z, e[0], -1.0);
    double y0 = e[1] + (double)((int)top >> 23);
    double p1 = fma(r, FVM_L2_A0, FVM_L2_A1);
    double p2 = fma(r, FVM_L2_A2, FVM_L2_A3);
    double r2 = r * r;
    double q = fma(r2, p2, fma(r, FVM_L2_A4, y0));
    double ylogx = 2.0 * fma(p1, r2 * r2, q);
    double kd = ylogx + FVM_E2_SHIFT;
    fv_u64 ki = fvm_bits(kd);
    kd -= FVM_E2_SHIFT;
    double rr = ylogx - kd;
    double s = fvm_double(fvm_exp2_table[ki & 31] + (ki << 47));
    double p = fma(fma(rr, FVM_E2_C0, FVM_E2_C1), rr * rr, fma(rr, FVM_E2_C2, 1.0));
    return (float)(p * s);
}

#endif /* FASTVEC_GLIBC_MATH_H */
