module @conv attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<50xf32>, %arg1: tensor<54xf32>) -> (tensor<75xf32>) {
    %1 = "stablehlo.reshape"(%arg0) : (tensor<50xf32>) -> tensor<1x2x5x5xf32>
    %2 = "stablehlo.reshape"(%arg1) : (tensor<54xf32>) -> tensor<3x2x3x3xf32>
    // #0 convolution
    %3 = "stablehlo.convolution"(%1, %2) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>, precision_config = [#stablehlo<precision HIGH>, #stablehlo<precision HIGH>], rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32>
    %4 = "stablehlo.reshape"(%3) : (tensor<1x3x5x5xf32>) -> tensor<75xf32>
    "func.return"(%4) : (tensor<75xf32>) -> ()
  }
}
