module @softmax attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<10xbf16>) -> (tensor<10xbf16>) {
    %1 = "stablehlo.reshape"(%arg0) : (tensor<10xbf16>) -> tensor<2x5xbf16>
    // #0 reduce
    %2 = "stablehlo.convert"(%1) : (tensor<2x5xbf16>) -> tensor<2x5xf32>
    %3 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %7 = "stablehlo.reduce"(%2, %3) ({
      ^bb0(%r4: tensor<f32>, %r5: tensor<f32>):
        %6 = "stablehlo.maximum"(%r4, %r5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%6) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x5xf32>, tensor<f32>) -> tensor<2xf32>
    %8 = "stablehlo.convert"(%7) : (tensor<2xf32>) -> tensor<2xbf16>
    // #1 broadcast_in_dim
    %9 = "stablehlo.broadcast_in_dim"(%8) {broadcast_dimensions = array<i64: 0>} : (tensor<2xbf16>) -> tensor<2x5xbf16>
    // #2 subtract
    %10 = "stablehlo.convert"(%1) : (tensor<2x5xbf16>) -> tensor<2x5xf32>
    %11 = "stablehlo.convert"(%9) : (tensor<2x5xbf16>) -> tensor<2x5xf32>
    %12 = "stablehlo.subtract"(%10, %11) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %13 = "stablehlo.convert"(%12) : (tensor<2x5xf32>) -> tensor<2x5xbf16>
    // #3 exponential
    %14 = "stablehlo.convert"(%13) : (tensor<2x5xbf16>) -> tensor<2x5xf32>
    %15 = "stablehlo.exponential"(%14) : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %16 = "stablehlo.convert"(%15) : (tensor<2x5xf32>) -> tensor<2x5xbf16>
    // #4 reduce
    %17 = "stablehlo.convert"(%16) : (tensor<2x5xbf16>) -> tensor<2x5xf32>
    %18 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %22 = "stablehlo.reduce"(%17, %18) ({
      ^bb0(%r19: tensor<f32>, %r20: tensor<f32>):
        %21 = "stablehlo.add"(%r19, %r20) : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "stablehlo.return"(%21) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x5xf32>, tensor<f32>) -> tensor<2xf32>
    %23 = "stablehlo.convert"(%22) : (tensor<2xf32>) -> tensor<2xbf16>
    // #5 broadcast_in_dim
    %24 = "stablehlo.broadcast_in_dim"(%23) {broadcast_dimensions = array<i64: 0>} : (tensor<2xbf16>) -> tensor<2x5xbf16>
    // #6 divide
    %25 = "stablehlo.convert"(%16) : (tensor<2x5xbf16>) -> tensor<2x5xf32>
    %26 = "stablehlo.convert"(%24) : (tensor<2x5xbf16>) -> tensor<2x5xf32>
    %27 = "stablehlo.optimization_barrier"(%26) : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %28 = "stablehlo.divide"(%25, %27) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %29 = "stablehlo.convert"(%28) : (tensor<2x5xf32>) -> tensor<2x5xbf16>
    %30 = "stablehlo.reshape"(%29) : (tensor<2x5xbf16>) -> tensor<10xbf16>
    "func.return"(%30) : (tensor<10xbf16>) -> ()
  }
}
