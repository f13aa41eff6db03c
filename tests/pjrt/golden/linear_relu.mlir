module @linear_relu attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32xf32>, %arg1: tensor<24xf32>, %arg2: tensor<3xf32>) -> (tensor<12xf32>) {
    %1 = "stablehlo.reshape"(%arg0) : (tensor<32xf32>) -> tensor<4x8xf32>
    %2 = "stablehlo.reshape"(%arg1) : (tensor<24xf32>) -> tensor<3x8xf32>
    // #0 dot_general
    %3 = "stablehlo.dot_general"(%1, %2) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>, precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
    // #1 broadcast_in_dim
    %4 = "stablehlo.broadcast_in_dim"(%arg2) {broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>) -> tensor<4x3xf32>
    // #2 add
    %5 = "stablehlo.add"(%3, %4) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    // #3 constant
    %6 = "stablehlo.constant"() {value = dense<0.0> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
    // #4 maximum
    %7 = "stablehlo.maximum"(%5, %6) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %8 = "stablehlo.reshape"(%7) : (tensor<4x3xf32>) -> tensor<12xf32>
    "func.return"(%8) : (tensor<12xf32>) -> ()
  }
}
